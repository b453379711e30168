/**
 * The one seam over the `vscode` module: every call the extension makes into the editor's API that a unit test
 * may want to replace goes through here (ruff-vscode's habit). Types are re-exported from `vscode` directly.
 */
import {
  commands,
  ConfigurationChangeEvent,
  ConfigurationScope,
  Disposable,
  EventEmitter,
  extensions,
  InputBoxOptions,
  LogOutputChannel,
  Position,
  Range,
  StatusBarAlignment,
  StatusBarItem,
  TreeDataProvider,
  TreeView,
  Uri,
  ViewColumn,
  window,
  workspace,
  WorkspaceConfiguration,
  WorkspaceFolder,
} from "vscode";

export function getConfiguration(section: string, scope?: ConfigurationScope): WorkspaceConfiguration {
  return workspace.getConfiguration(section, scope);
}

export function registerCommand(command: string, callback: (...args: unknown[]) => unknown): Disposable {
  return commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...rest: unknown[]): Thenable<T> {
  return commands.executeCommand<T>(command, ...rest);
}

export function createLogOutputChannel(name: string): LogOutputChannel {
  return window.createOutputChannel(name, { log: true });
}

export function createStatusBarItem(id: string, priority: number): StatusBarItem {
  return window.createStatusBarItem(id, StatusBarAlignment.Left, priority);
}

export function getWorkspaceFolders(): readonly WorkspaceFolder[] {
  return workspace.workspaceFolders ?? [];
}

export function getWorkspaceFolder(uri: Uri): WorkspaceFolder | undefined {
  return workspace.getWorkspaceFolder(uri);
}

export function isWorkspaceTrusted(): boolean {
  return workspace.isTrusted;
}

export function getExtension<T>(id: string): { isActive: boolean; exports: T; activate(): Thenable<T> } | undefined {
  return extensions.getExtension<T>(id);
}

export function activeTextEditor(): typeof window.activeTextEditor {
  return window.activeTextEditor;
}

export function showInformationMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return window.showInformationMessage(message, ...items);
}

export function showWarningMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return window.showWarningMessage(message, ...items);
}

export function showInputBox(options: InputBoxOptions): Thenable<string | undefined> {
  return window.showInputBox(options);
}

export function showErrorMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return window.showErrorMessage(message, ...items);
}

/** Scheme of the read-only documents {@link showReadOnlyJson} opens (no "save?" prompt when they close). */
const REPORT_SCHEME = "dynamo-lens-report";
const readOnlyDocuments = new Map<string, string>();
const readOnlyChanged = new EventEmitter<Uri>();

/** Serves the documents of {@link showReadOnlyJson}; registered once at activation. */
export function registerReadOnlyDocuments(): Disposable {
  return workspace.registerTextDocumentContentProvider(REPORT_SCHEME, {
    onDidChange: readOnlyChanged.event,
    provideTextDocumentContent: (uri) => readOnlyDocuments.get(uri.path) ?? "",
  });
}

/** Shows `content` as a read-only JSON document named `name`, beside the current editor. */
export async function showReadOnlyJson(name: string, content: string): Promise<void> {
  const uri = Uri.from({ scheme: REPORT_SCHEME, path: `/${name}.json` });
  readOnlyDocuments.set(uri.path, content);
  readOnlyChanged.fire(uri);
  const document = await workspace.openTextDocument(uri);
  await window.showTextDocument(document, { preview: true, viewColumn: ViewColumn.Beside });
}

/** Puts the cursor at a 0-based position of `uri` and shows the hover there. */
export async function showHoverAt(uri: Uri, line: number, character: number): Promise<void> {
  const position = new Position(line, character);
  await window.showTextDocument(uri, { selection: new Range(position, position), preserveFocus: false });
  await commands.executeCommand("editor.action.showHover");
}

/** Opens `uri` with the cursor on the 1-based `line` (tree view clicks). */
export async function revealLine(uri: unknown, line: unknown): Promise<void> {
  if (!(uri instanceof Uri) || typeof line !== "number") {
    return;
  }
  const position = new Position(Math.max(0, line - 1), 0);
  await window.showTextDocument(uri, { selection: new Range(position, position), preserveFocus: false });
}

export function parseUri(value: string): Uri {
  return Uri.parse(value);
}

export function createTreeView<T>(id: string, provider: TreeDataProvider<T>): TreeView<T> {
  return window.createTreeView(id, { treeDataProvider: provider, showCollapseAll: true });
}

export function onDidGrantWorkspaceTrust(listener: () => void): Disposable {
  return workspace.onDidGrantWorkspaceTrust(listener);
}

export function onDidChangeConfiguration(listener: (event: ConfigurationChangeEvent) => void): Disposable {
  return workspace.onDidChangeConfiguration(listener);
}
