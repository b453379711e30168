-- A second, independent LSP client: Neovim's built-in one (0.7+), headless.
-- Usage: nvim --headless -u NONE -i NONE -c "luafile client.lua"
-- Environment: DL_PYTHON (interpreter), DL_ROOT (workspace), DL_FILE (file to open), DL_OUT (JSON result),
-- DL_HOVER_LINE / DL_HOVER_CHAR (0-based hover position).
local env = vim.env
local result = { diagnostics = {}, hover = vim.NIL, errors = {} }

local function finish()
  local out = io.open(env.DL_OUT, "w")
  out:write(vim.fn.json_encode(result))
  out:close()
  vim.cmd("qall!")
end

local ok, err = pcall(function()
  local client_id = vim.lsp.start_client({
    name = "dynamo-lens",
    cmd = { env.DL_PYTHON, "-m", "dynamo_lens", "serve" },
    root_dir = env.DL_ROOT,
    init_options = { debounceMs = 0 },
    on_error = function(code, e)
      table.insert(result.errors, tostring(code) .. ": " .. tostring(e))
    end,
  })
  vim.cmd("edit " .. vim.fn.fnameescape(env.DL_FILE))
  local bufnr = vim.api.nvim_get_current_buf()
  vim.lsp.buf_attach_client(bufnr, client_id)
  vim.wait(30000, function()
    return #vim.diagnostic.get(bufnr) > 0
  end, 50)
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    table.insert(result.diagnostics, { code = d.code, line = d.lnum, col = d.col, source = d.source })
  end
  local position = { line = tonumber(env.DL_HOVER_LINE), character = tonumber(env.DL_HOVER_CHAR) }
  local replies = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = position,
  }, 10000)
  for _, reply in pairs(replies or {}) do
    if reply.result and reply.result.contents then
      result.hover = reply.result.contents.value
    end
  end
  vim.lsp.stop_client(client_id)
end)
if not ok then
  table.insert(result.errors, tostring(err))
end
finish()
