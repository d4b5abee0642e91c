import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { stderrTail, terminateChild, trackFake, untrackFake } from './fake-lifecycle';

export { stopAllFakeCameras } from './fake-lifecycle';

export type FakeCameraPattern = 'still' | 'motion';

export interface FakeRtspCameraOptions {
  /** TCP port on 127.0.0.1; 0 or absent picks a free one (kept across `restart()`). */
  port?: number;
  /** Mount paths, each starting with '/'. Default `['/cam']`. */
  mounts?: string[];
  width?: number;
  height?: number;
  fps?: number;
  /** Initial picture of every mount: `still` (black, nothing moves) or `motion` (a moving ball). Default motion. */
  pattern?: FakeCameraPattern;
  /** When set, the camera answers 401 to clients without these Basic credentials. */
  auth?: { username: string; password: string };
}

// Debian's python has the GStreamer bindings (python3-gi); a pyenv python on PATH does not.
const PYTHON = '/usr/bin/python3';
// Beside this file under Jest; from dist/test/fakes (the compiled benchmark) in the source tree.
const SCRIPT =
  [
    join(__dirname, 'rtsp-camera.py'),
    join(__dirname, '..', '..', '..', 'test', 'fakes', 'rtsp-camera.py'),
  ].find((path) => existsSync(path)) ?? join(__dirname, 'rtsp-camera.py');
const READY_TIMEOUT_MS = 10_000;
const COMMAND_TIMEOUT_MS = 5_000;

interface PendingCommand {
  line: string;
  resolve: () => void;
  reject: (error: Error) => void;
}

/**
 * A real RTSP camera on 127.0.0.1: GStreamer's RTSP server (test/fakes/rtsp-camera.py) serving H.264 over
 * RTP from a test pattern, optionally behind Basic authentication. Production code connects to `url()` the
 * way it connects to a real camera.
 */
export class FakeRtspCamera {
  private child: ChildProcess | null = null;
  private boundPort = 0;
  private stderr = '';
  private pending: PendingCommand[] = [];
  private readonly mounts: string[];
  private readonly patterns = new Map<string, FakeCameraPattern>();

  private constructor(private readonly options: FakeRtspCameraOptions) {
    this.mounts = options.mounts?.length ? [...options.mounts] : ['/cam'];
    for (const mount of this.mounts) {
      if (!mount.startsWith('/')) throw new Error(`mount path must start with '/': ${mount}`);
      this.patterns.set(mount, options.pattern ?? 'motion');
    }
    this.boundPort = options.port ?? 0;
  }

  static async start(options: FakeRtspCameraOptions = {}): Promise<FakeRtspCamera> {
    const camera = new FakeRtspCamera(options);
    await camera.launch();
    return camera;
  }

  get port(): number {
    return this.boundPort;
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** The stream's address, never with credentials (tests add them where a client needs them). */
  url(mount: string = this.mounts[0]): string {
    return `rtsp://127.0.0.1:${this.boundPort}${mount}`;
  }

  /**
   * Switches the live picture of a mount (default: the first). Resolves once the server has applied it;
   * while the camera is stopped, the pattern is remembered for the next `restart()`.
   */
  async setPattern(pattern: FakeCameraPattern, mount: string = this.mounts[0]): Promise<void> {
    if (!this.patterns.has(mount))
      throw new Error(`unknown mount ${mount} (mounts: ${this.mounts.join(', ')})`);
    this.patterns.set(mount, pattern);
    if (this.child) await this.command(`pattern ${mount} ${pattern}`);
  }

  /** Kills the server and waits for it to exit; its port is closed afterwards. */
  async stop(): Promise<void> {
    const child = this.child;
    untrackFake(this);
    if (!child) return;
    this.child = null;
    await terminateChild(child);
  }

  /** Starts again on the same port, with the same options and the patterns last requested. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  private async launch(): Promise<void> {
    const child = spawn(PYTHON, ['-u', SCRIPT, ...this.arguments()], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: pythonEnvironment(),
    });
    this.child = child;
    this.stderr = '';
    trackFake(this);
    child.stdin.on('error', () => undefined); // a dead child's closed pipe is reported by 'exit' instead
    child.stderr.on('data', (chunk: Buffer) => (this.stderr = stderrTail(this.stderr, chunk)));
    child.once('exit', (code, signal) => this.onExit(child, code, signal));
    const lines = createInterface({ input: child.stdout });
    try {
      this.boundPort = await this.waitForReady(child, lines);
    } catch (error) {
      lines.close();
      if (this.child === child) this.child = null;
      untrackFake(this);
      await terminateChild(child, 500);
      throw error;
    }
    lines.on('line', (line) => this.onReply(line));
  }

  private arguments(): string[] {
    const { width = 640, height = 360, fps = 15, auth } = this.options;
    const args = ['--port', String(this.boundPort), '--width', String(width), '--height', String(height)];
    args.push('--fps', String(fps));
    for (const mount of this.mounts) args.push('--mount', `${mount}=${this.patterns.get(mount)}`);
    if (auth) args.push('--username', auth.username, '--password', auth.password);
    return args;
  }

  private waitForReady(child: ChildProcess, lines: ReturnType<typeof createInterface>): Promise<number> {
    return new Promise<number>((resolve, reject) => {
      const fail = (reason: string): void => {
        cleanup();
        reject(new Error(`fake RTSP camera did not start: ${reason}\n${this.stderr.trim()}`));
      };
      const onLine = (line: string): void => {
        const match = /^READY (\d+)$/.exec(line.trim());
        if (!match) return;
        cleanup();
        resolve(Number(match[1]));
      };
      const onExit = (code: number | null, signal: NodeJS.Signals | null): void =>
        fail(`python exited (${signal ?? `code ${code}`})`);
      const onError = (error: Error): void => fail(error.message);
      const timer = setTimeout(() => fail(`no READY line within ${READY_TIMEOUT_MS} ms`), READY_TIMEOUT_MS);
      const cleanup = (): void => {
        clearTimeout(timer);
        lines.off('line', onLine);
        child.off('exit', onExit);
        child.off('error', onError);
      };
      lines.on('line', onLine);
      child.once('exit', onExit);
      child.once('error', onError);
    });
  }

  private command(line: string): Promise<void> {
    const stdin = this.child?.stdin;
    if (!stdin?.writable) return Promise.reject(new Error(`fake RTSP camera is not running (${line})`));
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending = this.pending.filter((entry) => entry !== command);
        reject(new Error(`fake RTSP camera did not answer "${line}" within ${COMMAND_TIMEOUT_MS} ms`));
      }, COMMAND_TIMEOUT_MS);
      const command: PendingCommand = {
        line,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      this.pending.push(command);
      stdin.write(`${line}\n`);
    });
  }

  // The server answers commands in order, one line each: `OK <command>` or `ERR <command>: <reason>`.
  private onReply(line: string): void {
    const command = this.pending.find(
      (entry) => line === `OK ${entry.line}` || line.startsWith(`ERR ${entry.line}:`),
    );
    if (!command) return;
    this.pending = this.pending.filter((entry) => entry !== command);
    if (line.startsWith('OK ')) command.resolve();
    else command.reject(new Error(`fake RTSP camera refused "${command.line}": ${line}`));
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child === child) {
      this.child = null;
      untrackFake(this);
    }
    const pending = this.pending;
    this.pending = [];
    for (const command of pending)
      command.reject(
        new Error(`fake RTSP camera exited (${signal ?? `code ${code}`}) before "${command.line}"`),
      );
  }
}

/** The environment without pyenv or virtualenv settings that would make /usr/bin/python3 miss its GI modules. */
function pythonEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(PYENV|PYTHON|VIRTUAL_ENV|CONDA)/.test(key)) continue;
    env[key] = value;
  }
  env.PATH = (process.env.PATH ?? '')
    .split(':')
    .filter((dir) => dir && !dir.includes('.pyenv'))
    .join(':');
  return env;
}
