import type { LogOutputChannel } from "vscode";

let channel: LogOutputChannel | undefined;

/** Routes every log line of the extension (and the server's `window/logMessage`) to one channel. */
export function setLogChannel(output: LogOutputChannel): void {
  channel = output;
}

export function logChannel(): LogOutputChannel | undefined {
  return channel;
}

/** Lines also go to the console in CI, where nobody can open the output channel (ruff-vscode's habit). */
const echo = (line: string): void => {
  if (process.env.CI) {
    console.log(`[dynamo-lens] ${line}`);
  }
};

export const logger = {
  info(message: string): void {
    channel?.info(message);
    echo(message);
  },
  warn(message: string): void {
    channel?.warn(message);
    echo(message);
  },
  error(message: string | Error): void {
    channel?.error(message);
    echo(String(message));
  },
  show(): void {
    channel?.show(true);
  },
};
