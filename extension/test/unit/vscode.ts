/**
 * A small stand-in for the `vscode` module in unit tests (vitest aliases `vscode` here). It implements only what
 * the modules under test touch, with the same observable behaviour; `calls` records what was asked of the editor.
 */

export const calls: { statusItems: FakeStatusBarItem[] } = { statusItems: [] };

/** What `extensions.getExtension(id)` finds; tests put a fake Python extension here. */
export const installedExtensions = new Map<
  string,
  { isActive: boolean; exports: unknown; activate(): Promise<unknown> }
>();

export class ThemeColor {
  constructor(readonly id: string) {}
}

export class ThemeIcon {
  constructor(readonly id: string) {}
}

export enum TreeItemCollapsibleState {
  None = 0,
  Collapsed = 1,
  Expanded = 2,
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ViewColumn {
  Beside = -2,
}

export class TreeItem {
  description?: string;
  tooltip?: string;
  iconPath?: ThemeIcon;
  contextValue?: string;
  command?: { command: string; title: string; arguments?: unknown[] };
  constructor(
    readonly label: string,
    readonly collapsibleState: TreeItemCollapsibleState,
  ) {}
}

export class EventEmitter<T> {
  private listeners: ((value: T) => void)[] = [];
  readonly event = (listener: (value: T) => void): { dispose(): void } => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(value: T): void {
    this.listeners.forEach((listener) => listener(value));
  }
  dispose(): void {
    this.listeners = [];
  }
}

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(path: string): Uri {
    return new Uri("file", path);
  }
  static parse(value: string): Uri {
    return value.startsWith("file://") ? new Uri("file", decodeURIComponent(value.slice(7))) : new Uri("other", value);
  }
  toString(): string {
    return `${this.scheme}://${this.fsPath}`;
  }
}

export class Position {
  constructor(
    readonly line: number,
    readonly character: number,
  ) {}
}

export class Range {
  constructor(
    readonly start: Position,
    readonly end: Position,
  ) {}
}

export class FakeStatusBarItem {
  text = "";
  tooltip: string | undefined;
  name: string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible = false;
  disposed = false;
  constructor(
    readonly id: string,
    readonly alignment: StatusBarAlignment,
    readonly priority: number,
  ) {}
  show(): void {
    this.visible = true;
  }
  dispose(): void {
    this.disposed = true;
  }
}

export const window = {
  createStatusBarItem(id: string, alignment: StatusBarAlignment, priority: number): FakeStatusBarItem {
    const item = new FakeStatusBarItem(id, alignment, priority);
    calls.statusItems.push(item);
    return item;
  },
  activeTextEditor: undefined,
};

export const workspace = {
  workspaceFolders: undefined,
  isTrusted: true,
  getWorkspaceFolder: (): undefined => undefined,
};

/** `extensions.getExtension` finds only what a test installed in {@link installedExtensions}. */
export const extensions = {
  getExtension: (id: string) => installedExtensions.get(id),
};

export const commands = {};
