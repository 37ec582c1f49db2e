import { randomUUID } from 'node:crypto';
import { query, type SDKMessage, type SDKUserMessage } from '@anthropic-ai/claude-agent-sdk';
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

/** One Claude Code process held open with streaming input. */
class PooledProcess {
  readonly prompts = new PromptQueue();
  readonly messages: AsyncIterator<SDKMessage>;
  child: ClaudeProcess | undefined;
  /** Busy from birth: a starting process must not be handed to a call before its start-up `/clear` ends. */
  busy = true;
  dead = false;
  idleTimer: NodeJS.Timeout | undefined;
  /** The watch of the call in flight; output from the process keeps it alive. */
  watch: CallWatch | undefined;

  constructor(launch: ClaudeLaunch, options: WarmPoolOptions) {
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
      });
      return this.child.child;
    };
    this.messages = query({ prompt: this.prompts, options: queryOptions })[Symbol.asyncIterator]();
  }

  /** Sends a prompt and reads until its result. */
  async ask(text: string, watch: CallWatch): ReturnType<typeof readUntilResult> {
    this.watch = watch;
    try {
      const uuid = this.prompts.push(text);
      return await readUntilResult(this.messages, watch, uuid);
    } finally {
      this.watch = undefined;
    }
  }

  kill(): void {
    this.dead = true;
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.prompts.end();
    this.child?.killTree();
  }
}

/**
 * Keeps Claude Code processes open so a call skips start-up (about 0.8 s cold, tens of milliseconds
 * warm). Calls stay independent: after each one the process gets `/clear`, so the next request carries
 * none of the previous conversation. Calls beyond the pool's size wait for a free process.
 */
export class WarmPool {
  private readonly processes: PooledProcess[] = [];
  private readonly waiters: ((process: PooledProcess) => void)[] = [];
  private readonly launch: () => ClaudeLaunch;
  private readonly options: Required<Omit<WarmPoolOptions, 'system'>> & { system?: string };
  private starting = 0;
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
      // Pooled processes run without partial messages; a streamed call starts cold.
      request.onText === undefined
    );
  }

  /** Starts processes until the pool is full, and resolves when they are ready. */
  async warm(): Promise<void> {
    const missing =
      this.options.size - this.processes.filter((process) => !process.dead).length - this.starting;
    await Promise.all(
      Array.from({ length: Math.max(0, missing) }, () =>
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
    const process = await this.acquire();
    const launch = this.launch();
    const watch = new CallWatch({
      timeoutMs: request.timeoutMs ?? launch.timeoutMs,
      idleTimeoutMs: request.idleTimeoutMs ?? launch.idleTimeoutMs,
      abortSignal: request.abortSignal,
      endAtApiRetry: launch.endAtApiRetry,
      onFail: () => process.kill(),
    });
    try {
      const found = await process.ask(request.prompt, watch);
      if (watch.failure !== undefined) throw watch.failure;
      const result = finishCall(found, request, performance.now() - started, process.child?.stderr ?? '');
      result.warnings.push('served by a warm Claude Code process');
      void this.reset(process);
      return result;
    } catch (error) {
      throw this.discard(process, watch, error);
    } finally {
      watch.stop();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const process of this.processes.splice(0)) process.kill();
  }

  private async startProcess(): Promise<PooledProcess> {
    this.starting++;
    const process = new PooledProcess(this.launch(), this.options);
    this.processes.push(process);
    try {
      await this.clear(process);
      return process;
    } finally {
      this.starting--;
    }
  }

  /**
   * Sends `/clear` and waits for its result: a local command, so no API request. It starts a new
   * process up and empties a used one's conversation. A process that fails it is killed and forgotten.
   */
  private async clear(process: PooledProcess): Promise<void> {
    const launch = this.launch();
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
      throw this.discard(process, watch, error);
    } finally {
      watch.stop();
    }
  }

  private async acquire(): Promise<PooledProcess> {
    const idle = this.processes.find((process) => !process.busy && !process.dead);
    if (idle !== undefined) {
      idle.busy = true;
      if (idle.idleTimer !== undefined) clearTimeout(idle.idleTimer);
      return idle;
    }
    const live = this.processes.filter((process) => !process.dead).length;
    if (live < this.options.size) {
      return this.startProcess();
    }
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Clears the conversation, then hands the process to a waiting call or marks it idle. */
  private async reset(process: PooledProcess): Promise<void> {
    try {
      await this.clear(process);
      this.release(process);
    } catch {
      // A waiting call still needs a process; start a replacement for it.
      const waiter = this.waiters.shift();
      if (waiter !== undefined && !this.closed) {
        this.startProcess()
          .then((replacement) => waiter(replacement))
          .catch(() => this.waiters.unshift(waiter));
      }
    }
  }

  private release(process: PooledProcess): void {
    if (process.dead || this.closed) return;
    const waiter = this.waiters.shift();
    if (waiter !== undefined) {
      process.busy = true;
      waiter(process);
      return;
    }
    process.busy = false;
    process.idleTimer = setTimeout(() => {
      if (!process.busy) {
        process.kill();
        this.forget(process);
      }
    }, this.options.idleShutdownMs);
    process.idleTimer.unref();
  }

  /** Kills and forgets a process that failed; returns the error to throw. */
  private discard(process: PooledProcess, watch: CallWatch, error: unknown): SwitchboardError {
    process.kill();
    this.forget(process);
    return watch.failure ?? asClaudeError(error, process.child);
  }

  private forget(process: PooledProcess): void {
    const index = this.processes.indexOf(process);
    if (index >= 0) this.processes.splice(index, 1);
  }
}
