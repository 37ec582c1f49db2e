import type { Command } from 'commander';

/**
 * Turns commander's usage errors (unknown option, missing argument, bad value) into the one-line
 * `switchboard: <what> (<fix>)` format every other error uses. Set on every command, because each
 * command writes its own errors and the fix names the command's own `--help`.
 */
export function useOneLineUsageErrors(command: Command): void {
  const path = commandPath(command);
  command.configureOutput({
    outputError: (text, write) => write(`${formatUsageError(text, path)}\n`),
  });
  for (const subcommand of command.commands) useOneLineUsageErrors(subcommand);
}

/**
 * `error: unknown option '--jsn'\n(Did you mean --json?)` → `switchboard: unknown option '--jsn'
 * (did you mean --json? run \`switchboard route --help\` for usage)`.
 */
export function formatUsageError(text: string, path: string): string {
  const lines = text
    .trim()
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');
  const what = (lines[0] ?? 'invalid usage').replace(/^error:\s*/, '');
  const suggestion = lines
    .slice(1)
    .join(' ')
    .replace(/^\((.*)\)$/, '$1')
    .replace(/^Did you mean/, 'did you mean');
  const usage = `run \`${path} --help\` for usage`;
  return `switchboard: ${what} (${suggestion === '' ? usage : `${suggestion} ${usage}`})`;
}

function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current !== null; current = current.parent) {
    names.unshift(current.name());
  }
  return names.join(' ');
}
