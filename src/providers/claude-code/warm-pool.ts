import { randomUUID } from 'node:crypto';
import type { SDKMessage, SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
import type { CallResult } from '../../core/call-types.js';
import { SwitchboardError } from '../../core/errors.js';
import {
  asClaudeError,
  baseQueryOptions,
  CallWatch,
  finishCall,
  readUntilResult,
  type ClaudeCallOptions,
  type ClaudeLaunch,
} from './call-session.js';
import { loadAgentSdk, type AgentSdk } from './agent-sdk.js';
import { ClaudeProcess } from './process-group.js';

export interface WarmPoolOptions {
  /** Processes kept ready. */
  size: number;
  /** The model the pooled processes run; calls for another model start cold. */
  model: string;
  /** The system prompt of the pooled processes; calls with another one start cold. */
  system?: string;
  /** Close a process that has been idle this long (ms); the pool starts a new one on demand. @default 300_000 */
  idleShutdownMs?: number;
}

/** The `/clear` command: a local command (no API request) that empties the session's conversation. */
const CLEAR = '/clear';

/** An async iterable the SDK reads user messages from, fed one prompt at a time. */
class PromptQueue implements AsyncIterable<SDKUserMessage> {
  private readonly waiting: ((result: IteratorResult<SDKUserMessage>) => void)[] = [];
  private readonly queued: SDKUserMessage[] = [];
  private ended = false;

  /** Queues a prompt; returns the uuid its result will carry. */
  push(text: string): string {
    const uuid = randomUUID();
    const message: SDKUserMessage = {
      type: 'user',
      message: { role: 'user', content: text },
      parent_tool_use_id: null,
      uuid,
    };
    const waiter = this.waiting.shift();
    if (waiter !== undefined) waiter({ value: message, done: false });
    else this.queued.push(message);
    return uuid;
  }

  end(): void {
    this.ended = true;
    for (const waiter of this.waiting.splice(0)) waiter({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterator<SDKUserMessage> {
    return {
      next: () => {
        const message = this.queued.shift();
        if (message !== undefined) return Promise.resolve({ value: message, done: false });
        if (this.ended) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.waiting.push(resolve));
      },
    };
  }
}

/** Whether a message shows that Claude Code began a turn: its `init`, or anything of the answer. */
function beginsTurn(message: SDKMessage): boolean {
  return (
    (message.type === 'system' && message.subtype === 'init') ||
    message.type === 'assistant' ||
    message.type === 'stream_event' ||
    message.type === 'result'
  );
}

/** One Claude Code process held open with streaming input. */
class PooledProcess {
  readonly prompts = new PromptQueue();
  readonly messages: AsyncIterator<SDKMessage>;
  child: ClaudeProcess | undefined;
  /** Busy from birth: a starting process must not be handed to a call before its start-up `/clear` ends. */
  busy = true;
  dead = false;
  /** Ended on purpose (idle shutdown, a failed call, the pool closing): the pool does not replace it. */
  retired = false;
  idleTimer: NodeJS.Timeout | undefined;
  /** The watch of the call in flight; output from the process keeps it alive. */
  watch: CallWatch | undefined;
  /** Whether the last prompt's turn began (see `ask`). */
  turnStarted = false;

  constructor(
    query: AgentSdk['query'],
    launch: ClaudeLaunch,
    options: WarmPoolOptions,
    /** Called once when the process exits, whatever the reason. */
    onExit: (process: PooledProcess) => void,
  ) {
    const queryOptions = baseQueryOptions(
      launch,
      options.system === undefined
        ? { model: options.model }
        : { model: options.model, system: options.system },
    );
    queryOptions.spawnClaudeCodeProcess = (spawnOptions) => {
      this.child = new ClaudeProcess(spawnOptions);
      this.child.child.stdout.on('data', () => this.watch?.touch());
      this.child.child.once('exit', () => {
        this.dead = true;
        onExit(this);
      });
      return this.child.child;
    };
    this.messages = query({ prompt: this.prompts, options: queryOptions })[Symbol.asyncIterator]();
  }

  /** Whether the process can take a prompt: started, and not known to have ended. */
  get usable(): boolean {
    return !this.dead && this.child !== undefined && !this.child.exited;
  }

  /**
   * Sends a prompt and reads until its result. `turnStarted` tells afterwards whether Claude Code began
   * the turn: its `init` comes before the API request, so a turn without it sent nothing to the API.
   */
  async ask(text: string, watch: CallWatch): ReturnType<typeof readUntilResult> {
    this.watch = watch;
    this.turnStarted = false;
    const messages: AsyncIterator<SDKMessage> = {
      next: async () => {
        const next = await this.messages.next();
        if (next.done !== true && beginsTurn(next.value)) this.turnStarted = true;
        return next;
      },
    };
    try {
      const uuid = this.prompts.push(text);
      return await readUntilResult(messages, watch, uuid);
    } finally {
      this.watch = undefined;
    }
  }

  kill(): void {
    this.retired = true;
    this.dead = true;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.prompts.end();
    this.child?.killTree();
  }
}

/**
 * Keeps Claude Code processes open so a call skips start-up (about 0.7 s cold, tens of milliseconds
 * warm). Calls stay independent: after each one the process gets `/clear`, so the next request carries
 * none of the previous conversation. Calls beyond the pool's size wait for a free process. A process
 * that ends on its own (killed, crashed) is replaced in the background and never handed to a call.
 */
export class WarmPool {
  private readonly processes: PooledProcess[] = [];
  /** Calls waiting for a process; woken, oldest first, whenever one may have become available. */
  private readonly waiters: (() => void)[] = [];
  private readonly launch: () => ClaudeLaunch;
  /**
   * The provider's time limits, taken from its first launch: they never change, while each launch
   * copies the whole environment, which a warm call does not need.
   */
  private limits: Pick<ClaudeLaunch, 'timeoutMs' | 'idleTimeoutMs' | 'endAtApiRetry'> | undefined;
  private readonly options: Required<Omit<WarmPoolOptions, 'system'>> & { system?: string };
  /** Starts still loading the Agent SDK, not yet in `processes`. */
  private loading = 0;
  private closed = false;

  constructor(launch: () => ClaudeLaunch, options: WarmPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) {
      throw new SwitchboardError('INVALID_INPUT', 'Expected the pool "size" to be a positive integer');
    }
    this.launch = launch;
    this.options = { idleShutdownMs: 300_000, ...options };
  }

  /** Whether a call can run in a pooled process: same model and system prompt, no per-call agent options. */
  canServe(request: ClaudeCallOptions): boolean {
    return (
      !this.closed &&
      request.model === this.options.model &&
      request.system === this.options.system &&
      request.schema === undefined &&
      request.resume === undefined &&
      request.allowedTools === undefined &&
      request.cwd === undefined &&
      request.mcpServers === undefined &&
      request.persistSession !== true &&
      request.maxTurns === undefined &&
      request.maxBudgetUsd === undefined &&
      request.reasoning === undefined &&
      // Pooled processes run without partial messages; a streamed call starts cold.
      request.onText === undefined &&
      // Words sent while it runs go in as the session's streaming input, which a pooled process shares.
      request.followUp === undefined
    );
  }

  /** Starts processes until the pool is full, and resolves when they are ready. */
  async warm(): Promise<void> {
    await Promise.all(
      Array.from({ length: this.missing() }, () =>
        this.startProcess().then((process) => this.release(process)),
      ),
    );
  }

  /** Process ids of the live pooled processes. */
  get pids(): number[] {
    return this.processes
      .filter((process) => !process.dead)
      .flatMap((process) => (process.child?.pid === undefined ? [] : [process.child.pid]));
  }

  async call(request: ClaudeCallOptions): Promise<CallResult> {
    const started = performance.now();
    // A process may die between its last check and the prompt (its exit not yet seen): if Claude Code
    // never began the turn, nothing reached the API, and the call goes to another process.
    for (let attempt = 0; ; attempt++) {
      const process = await this.acquire();
      const launch = this.timeLimits();
      const watch = new CallWatch({
        timeoutMs: request.timeoutMs ?? launch.timeoutMs,
        idleTimeoutMs: request.idleTimeoutMs ?? launch.idleTimeoutMs,
        abortSignal: request.abortSignal,
        endAtApiRetry: launch.endAtApiRetry,
        onFail: () => process.kill(),
      });
      let found: Awaited<ReturnType<PooledProcess['ask']>> | undefined;
      try {
        found = await process.ask(request.prompt, watch);
        if (watch.failure !== undefined) throw watch.failure;
        const result = finishCall(found, request, performance.now() - started, process.child?.stderr ?? '');
        result.warm = true;
        // The caller gets its answer first; the process stays busy (never handed out) until cleared.
        setImmediate(() => void this.reset(process));
        return result;
      } catch (error) {
        if (found?.result !== undefined && watch.failure === undefined && process.usable) {
          // Claude Code ended the turn and reported the failure (a 400, say): the process is sound.
          void this.reset(process);
        } else {
          this.retire(process, true);
          if (attempt === 0 && watch.failure === undefined && !process.turnStarted) continue;
        }
        throw watch.failure ?? asClaudeError(error, process.child);
      } finally {
        watch.stop();
      }
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const process of this.processes.splice(0)) process.kill();
    this.wake();
  }

  /** Processes short of the pool's size, counting those starting. */
  private missing(): number {
    const live = this.processes.filter((process) => !process.dead).length;
    return Math.max(0, this.options.size - live - this.loading);
  }

  /** Starts a process and waits for its start-up `/clear`; it comes back busy, for the caller to use or release. */
  private async startProcess(): Promise<PooledProcess> {
    this.loading++;
    let query: AgentSdk['query'];
    try {
      ({ query } = await loadAgentSdk());
    } finally {
      this.loading--;
    }
    this.checkOpen();
    const process = new PooledProcess(query, this.launch(), this.options, (ended) => this.exited(ended));
    this.processes.push(process);
    try {
      await this.clear(process);
    } catch (error) {
      // Not replaced: a binary that dies at start would otherwise be restarted for ever.
      this.retire(process, false);
      throw error;
    }
    return process;
  }

  /** A process ended. One that was idle died under us: replace it in the background. */
  private exited(process: PooledProcess): void {
    // A busy process's call or `/clear` sees the end itself and retires it.
    if (process.busy || process.retired) return;
    this.forget(process);
    this.refill();
  }

  /** Starts the missing processes in the background. Waiting calls are woken either way. */
  private refill(): void {
    if (this.closed) return;
    for (let index = this.missing(); index > 0; index--) {
      this.startProcess()
        .then((process) => this.release(process))
        // A waiting call then starts a process itself, and gets the error if that fails too.
        .catch(() => this.wake());
    }
  }

  /**
   * Sends `/clear` and waits for its result: a local command, so no API request. It starts a new
   * process up and empties a used one's conversation.
   */
  private async clear(process: PooledProcess): Promise<void> {
    const launch = this.timeLimits();
    const watch = new CallWatch({
      timeoutMs: launch.timeoutMs,
      idleTimeoutMs: launch.idleTimeoutMs,
      abortSignal: undefined,
      onFail: () => process.kill(),
    });
    try {
      const found = await process.ask(CLEAR, watch);
      if (watch.failure !== undefined) throw watch.failure;
      if (found.result === undefined) throw new Error('the process ended before answering /clear');
    } catch (error) {
      throw watch.failure ?? asClaudeError(error, process.child);
    } finally {
      watch.stop();
    }
  }

  /** An idle live process, else a new one while the pool is short, else the next one released. */
  private async acquire(): Promise<PooledProcess> {
    for (;;) {
      this.checkOpen();
      for (const process of [...this.processes]) {
        if (process.busy) continue;
        if (!process.usable) {
          // Ended, its exit event not yet handled: never handed out, replaced now.
          process.retired = true;
          this.forget(process);
          this.refill();
          continue;
        }
        process.busy = true;
        if (process.idleTimer !== undefined) clearTimeout(process.idleTimer);
        return process;
      }
      if (this.missing() > 0) return this.startProcess();
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  /** Clears the conversation, then hands the process to a waiting call or marks it idle. */
  private async reset(process: PooledProcess): Promise<void> {
    try {
      await this.clear(process);
      this.release(process);
    } catch {
      this.retire(process, true);
    }
  }

  /** Marks a ready process idle and wakes the oldest waiting call to take it. */
  private release(process: PooledProcess): void {
    if (!process.usable || this.closed) return;
    process.busy = false;
    process.idleTimer = setTimeout(() => {
      if (!process.busy) this.retire(process, false);
    }, this.options.idleShutdownMs);
    process.idleTimer.unref();
    this.waiters.shift()?.();
  }

  /** Kills and forgets a process; `replace` starts its successor in the background. */
  private retire(process: PooledProcess, replace: boolean): void {
    process.kill();
    this.forget(process);
    if (replace) this.refill();
    else this.wake();
  }

  private forget(process: PooledProcess): void {
    const index = this.processes.indexOf(process);
    if (index >= 0) this.processes.splice(index, 1);
  }

  /** Wakes every waiting call to look again (a process ended, a start failed, the pool closed). */
  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }

  private timeLimits(): NonNullable<WarmPool['limits']> {
    if (this.limits === undefined) {
      const { timeoutMs, idleTimeoutMs, endAtApiRetry } = this.launch();
      this.limits = { timeoutMs, idleTimeoutMs, endAtApiRetry };
    }
    return this.limits;
  }

  private checkOpen(): void {
    if (this.closed)
      throw new SwitchboardError('ABORTED', 'the warm pool was closed', { provider: 'claude' });
  }
}
