import {
  EventEmitter,
  ThemeIcon,
  TreeItem,
  TreeItemCollapsibleState,
  Uri,
  type Event,
  type TreeDataProvider,
} from "vscode";
import { ClientCommand } from "../constants";
import type { RunReport } from "../report";
import { buildFrameNodes, type FrameNode, type NodeKind } from "./frameNodes";

const ICONS: Record<NodeKind, string> = {
  rank: "server-process",
  frame: "symbol-function",
  entry: "database",
  guard: "shield",
  recompiles: "debug-restart",
  recompile: "debug-restart",
  graphBreaks: "debug-disconnect",
  graphBreak: "debug-disconnect",
  limit: "warning",
  missing: "info",
};

/** Expanded at first sight: a frame shows its entries and problems without a click; guard lists stay folded. */
const EXPANDED: ReadonlySet<NodeKind> = new Set<NodeKind>(["rank", "frame", "recompiles", "graphBreaks"]);

/** The "Compiled Frames" view: the last run report, as built by {@link buildFrameNodes}. */
export class FramesTreeProvider implements TreeDataProvider<FrameNode> {
  private readonly changed = new EventEmitter<FrameNode | undefined>();
  private roots: FrameNode[] = [];

  readonly onDidChangeTreeData: Event<FrameNode | undefined> = this.changed.event;

  show(report: RunReport | undefined, workspaceRoot?: string): void {
    this.roots = report ? buildFrameNodes(report, workspaceRoot) : [];
    this.changed.fire(undefined);
  }

  clear(): void {
    this.show(undefined);
  }

  getChildren(node?: FrameNode): FrameNode[] {
    return node ? [...node.children] : this.roots;
  }

  getTreeItem(node: FrameNode): TreeItem {
    const state =
      node.children.length === 0
        ? TreeItemCollapsibleState.None
        : EXPANDED.has(node.kind)
          ? TreeItemCollapsibleState.Expanded
          : TreeItemCollapsibleState.Collapsed;
    const item = new TreeItem(node.label, state);
    item.description = node.description;
    item.tooltip = node.tooltip;
    item.iconPath = new ThemeIcon(ICONS[node.kind]);
    item.contextValue = node.kind;
    if (node.location) {
      item.command = {
        command: ClientCommand.revealLocation,
        title: "Reveal source line",
        arguments: [Uri.file(node.location.path), node.location.line],
      };
    }
    return item;
  }

  dispose(): void {
    this.changed.dispose();
  }
}
