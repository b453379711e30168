import { describe, expect, it } from "vitest";
import { enclosingScopes, testNodeIdAt } from "../../src/testId";

const source = `import torch

def helper():
    return 1

def test_counter():
    model = torch.nn.Linear(2, 2)

    def inner():
        return model
    assert inner()

class TestModel:
    def setup_method(self):
        self.x = 1

    # a comment at a lower indentation
    async def test_async(self):
        await something()

class Helper:
    def test_not_collected(self):
        pass
`.split("\n");

const line = (text: string): number => source.findIndex((l) => l.includes(text));

describe("testNodeIdAt", () => {
  it.each([
    ["model = torch.nn.Linear", "/ws/test_m.py::test_counter"],
    ["def test_counter", "/ws/test_m.py::test_counter"],
    ["return model", "/ws/test_m.py::test_counter"],
    ["assert inner()", "/ws/test_m.py::test_counter"],
    ["await something()", "/ws/test_m.py::TestModel::test_async"],
    ["async def test_async", "/ws/test_m.py::TestModel::test_async"],
  ])("inside %j → %s", (text, expected) => {
    expect(testNodeIdAt(source, line(text), "/ws/test_m.py")).toBe(expected);
  });

  it.each([["import torch"], ["return 1"], ["self.x = 1"], ["class TestModel"], ["pass"]])(
    "no test around %j",
    (text) => {
      expect(testNodeIdAt(source, line(text), "/ws/test_m.py")).toBeUndefined();
    },
  );

  it("is undefined past the end and in an empty file", () => {
    expect(testNodeIdAt([], 0, "f.py")).toBeUndefined();
    expect(testNodeIdAt(["def test_a():", "    pass"], 99, "f.py")).toBe("f.py::test_a");
  });
});

describe("enclosingScopes", () => {
  it("lists the scopes outermost first, skipping comments at lower indentation", () => {
    expect(enclosingScopes(source, line("await something()"))).toEqual([
      { kind: "class", name: "TestModel" },
      { kind: "def", name: "test_async" },
    ]);
  });
});
