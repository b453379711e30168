/**
 * The pytest node id of the test that encloses a cursor line, from the source lines alone (an indentation walk;
 * the server does the real analysis, this only names what "Run Test Under Cursor" should run).
 */

interface Scope {
  readonly kind: "def" | "class";
  readonly name: string;
}

const SCOPE = /^(\s*)(?:async\s+)?(def|class)\s+([A-Za-z_]\w*)/;

function indentOf(line: string): number {
  return line.length - line.trimStart().length;
}

function isCode(line: string): boolean {
  const text = line.trim();
  return text !== "" && !text.startsWith("#");
}

/** The `def`/`class` scopes around `line` (0-based), outermost first. */
export function enclosingScopes(lines: readonly string[], line: number): Scope[] {
  const scopes: Scope[] = [];
  let bound = Number.POSITIVE_INFINITY;
  for (let i = Math.min(line, lines.length - 1); i >= 0 && bound > 0; i--) {
    const text = lines[i];
    if (!isCode(text)) {
      continue;
    }
    const indent = indentOf(text);
    const match = SCOPE.exec(text);
    if (i === line && match) {
      scopes.push({ kind: match[2] as Scope["kind"], name: match[3] });
      bound = indent;
    } else if (indent < bound) {
      if (match) {
        scopes.push({ kind: match[2] as Scope["kind"], name: match[3] });
      }
      bound = indent;
    }
  }
  return scopes.reverse();
}

/**
 * `<file>::TestClass::test_name` for the test function around `line`, or undefined when the cursor is not inside one.
 * A helper nested inside a test runs that test; a `test_*` method counts only inside `Test*` classes (pytest's rule).
 */
export function testNodeIdAt(lines: readonly string[], line: number, file: string): string | undefined {
  const parts: string[] = [];
  for (const scope of enclosingScopes(lines, line)) {
    if (scope.kind === "class" && scope.name.startsWith("Test")) {
      parts.push(scope.name);
    } else if (scope.kind === "def" && scope.name.startsWith("test")) {
      return [file, ...parts, scope.name].join("::");
    } else {
      return undefined;
    }
  }
  return undefined;
}
