/**
 * The run_code sandbox (src/sandbox), against a real bubblewrap: code reaches nothing but its own
 * task's workspace (not the database, /etc/shadow, the service's environment, another task's
 * workspace, the host's loopback or the network), every limit holds (processes, memory, disk,
 * time, leftover processes), and after each attack the next run still works. Then the happy
 * paths: python over an uploaded CSV, javascript, a shell pipeline, and the tar stream reader's
 * checks on its own. No mocks: when bubblewrap cannot run here the sandbox tests are skipped
 * with the probe's reason (in CI they fail).
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { probeCgroups, type CgroupSupport } from '../../src/sandbox/cgroups.js';
import { createSandbox, type RunRequest, type RunResult, type Sandbox } from '../../src/sandbox/sandbox.js';
import { extractTar, safeRelative, SnapshotError } from '../../src/sandbox/tar-extract.js';
import { ensureWorkspace, inputNames, taskWorkspaceDir } from '../../src/sandbox/workspace.js';
import { until, within } from '../kit/bounded-waits.js';
import { hostProcessesWith } from '../kit/process.js';
import { skipUnlessAvailable } from '../kit/require-tool.js';

const MiB = 1024 * 1024;
const LIMITS = { memoryBytes: 256 * MiB, workspaceBytes: 32 * MiB, tmpBytes: 16 * MiB, pids: 64, concurrentRuns: 4 };
const ENV_SECRET = `quarry-env-secret-${process.pid}`;
const DB_SECRET = 'db-secret-7f3a9c';
const OTHER_SECRET = 'other-task-secret-51c2';

// A data dir standing in for the service's: its SQLite database, an upload, two task workspaces.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-sandbox-test-'));
const dbPath = path.join(dataDir, 'quarry.db');
fs.writeFileSync(dbPath, Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(84), Buffer.from(`CREATE TABLE api_keys(secret); INSERT ${DB_SECRET}`)]));
const uploadPath = path.join(dataDir, 'uploads', 'upl_01TEST');
fs.mkdirSync(path.dirname(uploadPath), { recursive: true });
fs.writeFileSync(uploadPath, 'region,amount\nnorth,10\nsouth,5.5\nnorth,2.5\n');
const otherWorkspace = taskWorkspaceDir(dataDir, 'tsk_other');
ensureWorkspace(otherWorkspace);
fs.writeFileSync(path.join(otherWorkspace, 'outputs', 'secret.txt'), OTHER_SECRET);

const sandbox: Sandbox = await createSandbox({ mode: 'bwrap', limits: LIMITS, protectedPaths: [dataDir] });
const skip = skipUnlessAvailable('bubblewrap', sandbox.available ? false : String(sandbox.reason));

let seq = 0;
function workspace(): string {
  const dir = taskWorkspaceDir(dataDir, `tsk_${++seq}`);
  ensureWorkspace(dir);
  return dir;
}

function run(req: Partial<RunRequest> & Pick<RunRequest, 'language' | 'code'>): Promise<RunResult> {
  return sandbox.run({ timeoutS: 20, workspaceDir: req.workspaceDir ?? workspace(), ...req });
}

/** The next run in the same workspace still works. */
async function stillWorks(workspaceDir: string): Promise<void> {
  const result = await run({ language: 'shell', code: 'echo ok', workspaceDir });
  assert.equal(result.exitCode, 0, result.stderr);
  assert.equal(result.stdout, 'ok\n');
}

function du(dir: string): number {
  let total = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    total += entry.isDirectory() ? du(full) : fs.lstatSync(full).size;
  }
  return total;
}

/** Host processes whose command line contains `marker`. */
after(async () => {
  await sandbox.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('sandbox: what the code can reach', { skip }, () => {
  it('cannot read the service database, even knowing its path', async () => {
    const ws = workspace();
    const result = await run({
      workspaceDir: ws,
      language: 'python',
      code: [
        'import os, glob',
        `for p in [${JSON.stringify(dbPath)}, "/proc/1/root" + ${JSON.stringify(dbPath)}, ${JSON.stringify(path.join(dataDir, 'uploads', 'upl_01TEST'))}]:`,
        '    try:',
        '        print("READ", open(p, "rb").read()[:200])',
        '    except OSError as e:',
        '        print("DENIED", type(e).__name__)',
        `print("LS", os.path.exists(${JSON.stringify(dataDir)}))`,
        'print("ROOT", sorted(os.listdir("/")))',
        'print("FOUND", [p for d in ["/workspace", "/tmp", "/.quarry", "/etc", "/dev", "/root"] for p in glob.glob(d + "/**/quarry.db", recursive=True)])',
      ].join('\n'),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.doesNotMatch(result.stdout, /READ/);
    assert.doesNotMatch(result.stdout + result.stderr, new RegExp(DB_SECRET));
    assert.match(result.stdout, /DENIED FileNotFoundError\nDENIED FileNotFoundError\nDENIED FileNotFoundError\nLS False\n/);
    assert.match(result.stdout, /FOUND \[\]/);
    // The root holds system directories, the workspace and nothing of the service.
    const root = /ROOT \[(.*)\]/.exec(result.stdout)![1]!.replace(/'/g, '').split(', ');
    for (const name of root) assert.ok(['.quarry', 'bin', 'dev', 'etc', 'lib', 'lib32', 'lib64', 'libx32', 'proc', 'root', 'sbin', 'tmp', 'usr', 'workspace'].includes(name), `unexpected /${name}`);
    await stillWorks(ws);
  });

  it('cannot read /etc/shadow; /etc holds only what interpreters need', async () => {
    const result = await run({ language: 'shell', code: 'cat /etc/shadow; echo "rc=$?"; ls /etc; ls /root 2>&1 | head -3; cat /etc/passwd' });
    assert.match(result.stdout, /rc=1/);
    assert.match(result.stderr, /\/etc\/shadow: No such file or directory/);
    assert.doesNotMatch(result.stdout, /shadow|ssh|sudoers/);
    assert.doesNotMatch(result.stdout, /^root:[^x]/m);
  });

  it("cannot see the service's environment", async () => {
    process.env.QUARRY_TEST_SECRET = ENV_SECRET;
    try {
      const result = await run({ language: 'shell', code: 'env; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"' });
      assert.equal(result.exitCode, 0, result.stderr);
      assert.doesNotMatch(result.stdout, new RegExp(ENV_SECRET));
      const names = new Set(result.stdout.split('\n').filter((l) => /^[A-Z_]+=/.test(l)).map((l) => l.split('=')[0]));
      for (const name of names) assert.ok(['PATH', 'HOME', 'LANG', 'TMPDIR', 'PYTHONUNBUFFERED', 'PWD', 'SHLVL', '_', 'OLDPWD'].includes(name!), `unexpected variable ${name}`);
      assert.match(result.stdout, /^HOME=\/workspace$/m);
    } finally {
      delete process.env.QUARRY_TEST_SECRET;
    }
  });

  it("cannot read another task's workspace", async () => {
    const ws = workspace();
    const result = await run({
      workspaceDir: ws,
      language: 'shell',
      // The secret is searched for without writing it out (the program text itself is in /.quarry).
      code: `cat ${otherWorkspace}/outputs/secret.txt; ls ${path.dirname(otherWorkspace)}; ls -a /workspace /workspace/outputs; grep -rs "$(echo ${Buffer.from(OTHER_SECRET).toString('base64')} | base64 -d)" /workspace /tmp /dev /etc; echo done`,
    });
    assert.doesNotMatch(result.stdout + result.stderr, new RegExp(OTHER_SECRET));
    assert.match(result.stderr, /No such file or directory/);
    assert.match(result.stdout, /done/);
  });

  it('has no network: the host loopback and outside addresses are unreachable', async () => {
    let connections = 0;
    const server = net.createServer((socket) => {
      connections++;
      socket.end('hello from the host\n');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const result = await run({
        language: 'python',
        code: [
          'import socket',
          `for host, port in [("127.0.0.1", ${port}), ("10.0.2.2", 80), ("1.1.1.1", 53), ("8.8.8.8", 443)]:`,
          '    s = socket.socket(); s.settimeout(3)',
          '    try:',
          '        s.connect((host, port)); print("CONNECTED", host, s.recv(100))',
          '    except OSError as e:',
          '        print("FAILED", host, e.errno)',
          'try:',
          '    print("RESOLVED", socket.gethostbyname("example.com"))',
          'except OSError as e:',
          '    print("NO DNS")',
          'print("IFACES", [n for _, n in socket.if_nameindex()])',
        ].join('\n'),
      });
      assert.equal(result.exitCode, 0, result.stderr);
      assert.doesNotMatch(result.stdout, /CONNECTED|RESOLVED/);
      assert.match(result.stdout, /FAILED 127\.0\.0\.1 111/); // refused: the sandbox's own, empty loopback
      assert.match(result.stdout, /FAILED 1\.1\.1\.1 101/); // network unreachable
      assert.match(result.stdout, /NO DNS/);
      assert.match(result.stdout, /IFACES \['lo'\]/);
      assert.equal(connections, 0);
    } finally {
      server.close();
    }
  });

  it('runs as an unprivileged user with no capabilities, read-only kernel settings and a seccomp filter', async () => {
    const result = await run({
      language: 'python',
      code: [
        'import ctypes, os',
        'libc = ctypes.CDLL(None, use_errno=True)',
        'print("uid", os.getuid(), os.getgid())',
        'print("caps", [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")])',
        'for name, nr, args in [("io_uring_setup", 425, (1, 0)), ("ptrace", 101, (0, 1, 0, 0)), ("unshare", 272, (0x10000000,)), ("bpf", 321, (0, 0, 0)), ("keyctl", 250, (0, 0)), ("clone_newuser", 56, (0x10000000 | 17, 0, 0, 0, 0)), ("clone3", 435, (0, 0))]:',
        '    r = libc.syscall(nr, *args)',
        '    print(name, r, ctypes.get_errno())',
        '# Opening for write is as far as this goes: nothing is ever written.',
        'for p in ["/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/proc/sys/net/ipv4/ip_forward"]:',
        '    try:',
        '        os.close(os.open(p, os.O_WRONLY)); print("WRITABLE", p)',
        '    except OSError as e:',
        '        print("sysctl", p, e.errno)',
        'print("binfmt_misc", os.listdir("/proc/sys/fs/binfmt_misc") if os.path.isdir("/proc/sys/fs/binfmt_misc") else "absent")',
        'try:',
        '    print("keys", repr(open("/proc/keys").read()))',
        'except OSError as e:',
        '    print("keys hidden", e.errno)',
        'import threading, subprocess',
        't = threading.Thread(target=lambda: print("thread ran")); t.start(); t.join()',
        'print(subprocess.run(["echo", "subprocess ran"], capture_output=True, text=True).stdout.strip())',
      ].join('\n'),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /uid 65534 65534/);
    assert.match(result.stdout, /caps \['0000000000000000'\]/);
    if (process.arch === 'x64') {
      for (const name of ['io_uring_setup', 'ptrace', 'unshare', 'bpf', 'keyctl', 'clone_newuser']) assert.match(result.stdout, new RegExp(`^${name} -1 1$`, 'm'), `${name} is denied with EPERM`);
      assert.match(result.stdout, /^clone3 -1 38$/m, 'clone3 answers ENOSYS so libc falls back to clone');
    }
    assert.match(result.stdout, /thread ran\nsubprocess ran/);
    // The code's uid is root outside when the service is: kernel settings stay read-only anyway.
    assert.doesNotMatch(result.stdout, /WRITABLE/);
    assert.match(result.stdout, /sysctl \/proc\/sys\/kernel\/core_pattern 30/);
    assert.match(result.stdout, /keys hidden 13|keys ''/);
    assert.match(result.stdout, /binfmt_misc (\[\]|absent)/);
  });
});

describe('sandbox: limits', { skip }, () => {
  const noPids = sandbox.available && !sandbox.cgroupControllers.includes('pids') ? `no writable pids cgroup here, so a fork bomb would be stopped only by its timeout: ${sandbox.warnings.join('; ')}` : false;
  it('contains a fork bomb with the pids limit while other runs go on', { skip: noPids }, async () => {
    const ws = workspace();
    const marker = `97${process.pid}`;
    const bomb = run({ workspaceDir: ws, language: 'shell', code: `sleep ${marker} & bomb() { bomb | bomb & }; bomb; sleep 3`, timeoutS: 4 });
    // The host, and a sandbox beside the bomb, stay responsive once it is running.
    await until('the fork bomb to start', () => hostProcessesWith(`sleep ${marker}`).length > 0);
    const started = Date.now();
    const beside = await run({ language: 'shell', code: 'echo beside' });
    assert.equal(beside.stdout, 'beside\n');
    assert.ok(Date.now() - started < 5000, `a run beside the fork bomb took ${Date.now() - started} ms`);
    const result = await bomb;
    assert.equal(result.limitHit, 'processes');
    assert.ok(result.durationMs < 15_000, `the fork bomb run took ${result.durationMs} ms`);
    await stillWorks(ws);
  });

  it('kills code that allocates 8 GiB', async () => {
    const ws = workspace();
    const result = await run({ workspaceDir: ws, language: 'python', code: 'data = b"x" * (8 << 30)\nprint("allocated", len(data))' });
    assert.doesNotMatch(result.stdout, /allocated/);
    assert.notEqual(result.exitCode, 0);
    assert.equal(result.limitHit, 'memory');
    await stillWorks(ws);
  });

  it('bounds a disk-fill attempt: the workspace, /tmp and /dev/shm are capped, and so is each file', async () => {
    const ws = workspace();
    const result = await run({
      workspaceDir: ws,
      language: 'python',
      code: [
        'import os',
        'chunk = b"x" * (1 << 20)',
        'for d in ["/workspace/outputs", "/tmp", "/dev/shm", "/", "/usr", "/var/tmp"]:',
        '    written = 0',
        '    try:',
        '        for i in range(100000):',
        '            with open(f"{d}/fill-{i}", "wb") as f:',
        '                for _ in range(8): f.write(chunk); written += 1',
        '    except OSError as e:',
        '        print(d, "stopped after", written, "MiB:", e.strerror)',
        'try:',
        '    with open("/tmp/sparse", "wb") as f: f.truncate(1 << 40)',
        'except OSError as e:',
        '    print("sparse:", e.strerror)',
      ].join('\n'),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /\/workspace\/outputs stopped after (\d+) MiB: No space left on device/);
    assert.match(result.stdout, /\/tmp stopped after \d+ MiB: No space left on device/);
    assert.match(result.stdout, /\/dev\/shm stopped after \d+ MiB: No space left on device/);
    assert.match(result.stdout, /^\/ stopped after 0 MiB: Read-only file system/m);
    assert.match(result.stdout, /sparse: File too large/);
    assert.equal(result.limitHit, 'disk');
    assert.ok(du(ws) <= LIMITS.workspaceBytes, `the saved workspace holds ${du(ws)} bytes`);
    await stillWorks(ws);
    const cleaned = await run({ workspaceDir: ws, language: 'shell', code: 'rm -f outputs/fill-*; ls outputs | wc -l' });
    assert.equal(cleaned.stdout.trim(), '0');
    assert.ok(du(ws) < MiB);
  });

  it('kills code that runs past its timeout, promptly, with everything it started', async () => {
    const ws = workspace();
    const started = Date.now();
    const result = await run({ workspaceDir: ws, language: 'shell', code: 'echo before; sleep 2222 & sleep 3333; echo after', timeoutS: 2 });
    const took = Date.now() - started;
    assert.equal(result.timedOut, true);
    assert.equal(result.signal, 'SIGKILL');
    assert.equal(result.stdout, 'before\n');
    assert.ok(took < 4000, `the run took ${took} ms for a 2 s timeout`);
    assert.deepEqual(hostProcessesWith('sleep 2222'), []);
    assert.deepEqual(hostProcessesWith('sleep 3333'), []);
    // The workspace is still saved after a timeout.
    assert.equal(result.workspaceSaved, true);
    await stillWorks(ws);
  });

  it('leaves nothing running after the code returns', async () => {
    const ws = workspace();
    const marker = `98${process.pid}`;
    const result = await run({
      workspaceDir: ws,
      language: 'shell',
      code: `setsid sleep ${marker}1 & nohup sleep ${marker}2 >/dev/null 2>&1 & (sleep ${marker}3 &) ; python3 -c "import os, time; os.fork() or time.sleep(${marker}4)" & echo started`,
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.equal(result.stdout, 'started\n');
    assert.deepEqual(hostProcessesWith(`sleep ${marker}`), []);
    assert.deepEqual(hostProcessesWith(`${marker}4`), []);
    await stillWorks(ws);
  });

  it('caps stdout and stderr but keeps reading, so a chatty program finishes', async () => {
    const result = await run({ language: 'python', code: 'import sys\nfor i in range(200000): print("line", i)\nprint("the end")\nsys.stderr.write("e" * 300000)' });
    assert.equal(result.exitCode, 0);
    assert.equal(result.stdoutTruncated, true);
    assert.equal(result.stderrTruncated, true);
    assert.ok(result.stdout.length < 70 * 1024);
    assert.match(result.stdout, /^line 0\n/);
    assert.match(result.stdout, /bytes omitted/);
    assert.match(result.stdout, /the end\n$/);
  });

  it('cancels a run at once when the signal aborts, leaving the workspace as it was', async () => {
    const ws = workspace();
    const controller = new AbortController();
    const marker = `96${process.pid}`;
    const running = run({ workspaceDir: ws, language: 'shell', code: `echo x > outputs/new.txt; sleep ${marker}`, signal: controller.signal });
    await until('the code to have written its file', () => hostProcessesWith(`sleep ${marker}`).length > 0);
    controller.abort(new Error('stopped'));
    const started = Date.now();
    await assert.rejects(running, /stopped/);
    assert.ok(Date.now() - started < 3000);
    assert.deepEqual(fs.readdirSync(path.join(ws, 'outputs')), []);
    await stillWorks(ws);
  });

  it('cancels a run aborted while its cgroup is being made, rather than running the code to its deadline', async () => {
    const ws = workspace();
    const cgroups = (sandbox as unknown as { cgroups: CgroupSupport }).cgroups;
    const create = cgroups.create;
    const made = { started: false, go: () => {} };
    cgroups.create = async (limits) => {
      made.started = true;
      await new Promise<void>((resolve) => (made.go = resolve));
      return create.call(cgroups, limits);
    };
    const controller = new AbortController();
    const running = run({ workspaceDir: ws, language: 'shell', code: 'echo x > outputs/new.txt; sleep 15', signal: controller.signal });
    try {
      await until('the run to make its cgroup', () => made.started);
      controller.abort(new Error('stopped'));
    } finally {
      cgroups.create = create;
      made.go();
    }
    await assert.rejects(within(running, 5000, 'the aborted run to end'), /stopped/);
    assert.deepEqual(fs.readdirSync(path.join(ws, 'outputs')), []);
    await stillWorks(ws);
  });
});

describe('sandbox: happy paths', { skip }, () => {
  it('python computes over an uploaded CSV in inputs/ and keeps its result in outputs/', async () => {
    const ws = workspace();
    const result = await run({
      workspaceDir: ws,
      language: 'python',
      inputs: [{ name: 'sales.csv', path: uploadPath }],
      code: [
        'import csv, collections',
        'totals = collections.Counter()',
        'for row in csv.DictReader(open("inputs/sales.csv")):',
        '    totals[row["region"]] += float(row["amount"])',
        'with open("outputs/totals.csv", "w", newline="") as f:',
        '    w = csv.writer(f); w.writerow(["region", "total"]); w.writerows(sorted(totals.items()))',
        'print(dict(totals))',
        'try:',
        '    open("inputs/sales.csv", "a").write("tamper")',
        'except OSError as e:',
        '    print("inputs are read-only:", e.strerror)',
      ].join('\n'),
    });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.match(result.stdout, /\{'north': 12\.5, 'south': 5\.5\}/);
    assert.match(result.stdout, /inputs are read-only: Read-only file system/);
    assert.equal(fs.readFileSync(path.join(ws, 'outputs', 'totals.csv'), 'utf8'), 'region,total\r\nnorth,12.5\r\nsouth,5.5\r\n');
    assert.equal(fs.existsSync(path.join(ws, 'inputs')), false, 'inputs are never saved in the workspace');
    assert.equal(fs.readFileSync(uploadPath, 'utf8'), 'region,amount\nnorth,10\nsouth,5.5\nnorth,2.5\n');
    // The next run finds the file it wrote.
    const again = await run({ workspaceDir: ws, language: 'shell', code: 'cat outputs/totals.csv | wc -l' });
    assert.equal(again.stdout.trim(), '3');
  });

  it('runs javascript, CommonJS or ES modules', async () => {
    const cjs = await run({ language: 'javascript', code: 'const fs = require("fs"); fs.writeFileSync("outputs/a.json", JSON.stringify({ n: [1, 2, 3].reduce((a, b) => a + b) })); console.log(fs.readFileSync("outputs/a.json", "utf8"))' });
    assert.equal(cjs.exitCode, 0, cjs.stderr);
    assert.equal(cjs.stdout, '{"n":6}\n');
    const esm = await run({ language: 'javascript', code: 'import { readdirSync } from "node:fs";\nconsole.log(await Promise.resolve(readdirSync(".").sort().join(",")));' });
    assert.equal(esm.exitCode, 0, esm.stderr);
    assert.equal(esm.stdout, 'inputs,outputs\n');
  });

  it('runs a shell pipeline and reports its exit code', async () => {
    const result = await run({ language: 'shell', code: "printf 'pear\\napple\\nfig\\napple\\n' | sort | uniq -c | sort -rn | head -1 | awk '{print $2}'\nexit 3" });
    assert.equal(result.stdout, 'apple\n');
    assert.equal(result.exitCode, 3);
    assert.equal(result.signal, null);
    assert.equal(result.timedOut, false);
  });

  it('keeps plain files only: a symlink the code leaves is not saved', async () => {
    const ws = workspace();
    const result = await run({ workspaceDir: ws, language: 'shell', code: 'ln -s /etc/passwd outputs/link; mkfifo outputs/fifo; echo hi > outputs/real.txt; ln outputs/real.txt outputs/hard.txt' });
    assert.equal(result.exitCode, 0, result.stderr);
    assert.equal(result.workspaceSaved, true);
    assert.deepEqual(fs.readdirSync(path.join(ws, 'outputs')).sort(), ['hard.txt', 'real.txt']);
    assert.ok(fs.lstatSync(path.join(ws, 'outputs', 'hard.txt')).isFile());
    assert.match(result.notes.join(' '), /symlinks or special files/);
  });
});

describe('sandbox on a host without cgroups (degraded: rlimits only)', { skip }, () => {
  let degraded: Sandbox;
  const emptyRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-no-cgroups-'));
  const warnings: string[] = [];
  after(async () => {
    await degraded?.close();
    fs.rmSync(emptyRoot, { recursive: true, force: true });
  });

  it('starts with warnings that say what is lost', async () => {
    degraded = await createSandbox({ mode: 'bwrap', limits: LIMITS, cgroupRoot: emptyRoot, log: (level, message) => level === 'warn' && warnings.push(message) });
    assert.equal(degraded.available, true, degraded.reason);
    assert.deepEqual(degraded.cgroupControllers, []);
    assert.match(warnings.join('\n'), /no cgroup hierarchy found.*fork bomb is stopped only by the timeout/);
  });

  it('still bounds memory (per process), disk, time and leftovers', async () => {
    const ws = workspace();
    const memory = await degraded.run({ workspaceDir: ws, language: 'python', code: 'data = b"x" * (8 << 30)', timeoutS: 20 });
    assert.equal(memory.exitCode, 1);
    assert.match(memory.stderr, /MemoryError/);
    assert.equal(memory.limitHit, 'memory');
    const disk = await degraded.run({ workspaceDir: ws, language: 'shell', code: 'i=0; while head -c 4194304 /dev/zero > outputs/f$i; do i=$((i+1)); done; echo stopped at $i', timeoutS: 20 });
    assert.match(disk.stdout, /stopped at \d+/);
    assert.ok(du(ws) <= LIMITS.workspaceBytes);
    const started = Date.now();
    const slow = await degraded.run({ workspaceDir: ws, language: 'shell', code: 'sleep 4444 & sleep 5555', timeoutS: 1 });
    assert.equal(slow.timedOut, true);
    assert.ok(Date.now() - started < 3000);
    assert.deepEqual(hostProcessesWith('sleep 4444'), []);
    await stillWorks(ws);
  });
});

describe('sandbox: start-up probe', () => {
  it('is unavailable, with the reason, when QUARRY_SANDBOX=off', async () => {
    const off = await createSandbox({ mode: 'off' });
    assert.equal(off.available, false);
    assert.match(off.reason!, /QUARRY_SANDBOX=off/);
    await assert.rejects(off.run({ language: 'shell', code: 'true', timeoutS: 1, workspaceDir: '/tmp/x' }), /not available/);
  });

  it('is unavailable when bubblewrap is missing', async () => {
    const missing = await createSandbox({ mode: 'bwrap', bwrapPath: '/nonexistent/bwrap' });
    assert.equal(missing.available, false);
    assert.match(missing.reason!, /bubblewrap is not installed/);
  });

  it('refuses to start when a directory it shows would expose the data dir', { skip }, async () => {
    const exposed = await createSandbox({ mode: 'bwrap', protectedPaths: ['/usr/share/quarry-data'] });
    assert.equal(exposed.available, false);
    assert.match(exposed.reason!, /\/usr\/share\/quarry-data.*lies inside \/usr/);
  });
});

describe('workspace archive reader', () => {
  /** A ustar header block for `name`. */
  function header(name: string, size: number, type: string, linkName = ''): Buffer {
    const block = Buffer.alloc(512);
    block.write(name, 0, 100);
    block.write('0000644\0', 100);
    block.write('0000000\0', 108);
    block.write('0000000\0', 116);
    block.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
    block.write('00000000000\0', 136);
    block.write(type, 156);
    block.write(linkName, 157, 100);
    block.write('ustar\0', 257);
    block.write('00', 263);
    block.fill(32, 148, 156);
    let sum = 0;
    for (const b of block) sum += b;
    block.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
    return block;
  }
  const file = (name: string, body: string) => Buffer.concat([header(name, body.length, '0'), Buffer.from(body), Buffer.alloc((512 - (body.length % 512)) % 512)]);
  const end = Buffer.alloc(1024);
  const extract = async (parts: Buffer[], limits = { maxBytes: 1000, maxEntries: 10 }) => {
    const dest = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-tar-'));
    try {
      const summary = await extractTar(Readable.from([Buffer.concat(parts)]), dest, limits, new Set(['inputs']));
      const files = fs.readdirSync(dest, { recursive: true }).map(String).sort();
      return { summary, files, read: (n: string) => fs.readFileSync(path.join(dest, n), 'utf8') };
    } finally {
      setImmediate(() => fs.rmSync(dest, { recursive: true, force: true }));
    }
  };

  it('extracts files and directories, and drops symlinks, devices and inputs/', async () => {
    const { files, read, summary } = await extract([header('./', 0, '5'), header('./outputs/', 0, '5'), file('./outputs/a.csv', 'x,y\n1,2\n'), header('./outputs/l', 0, '2', '/etc/shadow'), header('./dev', 0, '3'), file('./inputs/up.csv', 'no'), end]);
    assert.deepEqual(files, ['outputs', 'outputs/a.csv']);
    assert.equal(read('outputs/a.csv'), 'x,y\n1,2\n');
    assert.equal(summary.skipped, 2);
  });

  it('refuses names that leave the workspace', async () => {
    await assert.rejects(extract([file('../escape.txt', 'x'), end]), SnapshotError);
    await assert.rejects(extract([file('./outputs/../../escape.txt', 'x'), end]), /outside/);
    assert.equal(safeRelative('/abs/path'), 'abs/path');
    assert.equal(safeRelative('./'), null);
  });

  it('refuses an archive over the size or entry limits, or cut short', async () => {
    await assert.rejects(extract([file('big.bin', 'x'.repeat(2000)), end]), /more than 1000 bytes/);
    await assert.rejects(extract([...Array.from({ length: 12 }, (_, i) => file(`f${i}`, 'x')), end]), /more than 10 files/);
    await assert.rejects(extract([file('a', 'x')]), /end marker|ends early/);
    await assert.rejects(extract([Buffer.alloc(512, 1), end]), /checksum/);
  });

  it('names inputs safely and uniquely', () => {
    assert.deepEqual(inputNames([{ name: 'a.csv', fallback: 'u1' }, { name: 'a.csv', fallback: 'u2' }, { name: '../x', fallback: 'u3' }, { name: null, fallback: 'u4' }]), ['a.csv', 'a-2.csv', 'u3', 'u4']);
  });
});

describe('cgroup set-up, on a fake hierarchy (the file writes only; the real kernel is used above)', () => {
  const fake = (files: string[]) => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'quarry-cgroup-'));
    for (const f of files) {
      fs.mkdirSync(path.dirname(path.join(root, f)), { recursive: true });
      fs.writeFileSync(path.join(root, f), f.endsWith('cgroup.controllers') ? 'cpuset cpu io memory pids' : '');
    }
    return root;
  };
  const read = (root: string, f: string) => fs.readFileSync(path.join(root, f), 'utf8');

  it('v1: a cgroup per controller with pids.max, memory.limit_in_bytes and the CPU quota', async () => {
    const root = fake(['pids/tasks', 'memory/tasks', 'cpu/tasks']);
    const support = probeCgroups('quarry', () => {}, root);
    assert.equal(support.version, 1);
    assert.deepEqual([...support.controllers].sort(), ['cpu', 'memory', 'pids']);
    const run = (await support.create({ pids: 64, memoryBytes: 1000, cpus: 1.5 }))!;
    const name = `${process.pid}-`;
    assert.equal(run.procsFiles.length, 3);
    assert.ok(run.procsFiles.every((f) => f.startsWith(root) && f.includes(`/quarry/${name}`) && f.endsWith('/cgroup.procs')));
    const dir = (c: string) => path.relative(root, path.dirname(run.procsFiles.find((f) => f.includes(`/${c}/`))!));
    assert.equal(read(root, `${dir('pids')}/pids.max`), '64');
    assert.equal(read(root, `${dir('memory')}/memory.limit_in_bytes`), '1000');
    assert.equal(read(root, `${dir('cpu')}/cpu.cfs_quota_us`), '150000');
    assert.deepEqual(await run.stats(), { oomKills: 0, pidsMaxHits: 0 });
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('v2: enables the controllers from the root down to the parent, and writes the limits', async () => {
    const root = fake(['cgroup.controllers', 'cgroup.subtree_control']);
    const support = probeCgroups('quarry', () => {}, root);
    assert.equal(support.version, 2);
    assert.deepEqual(support.warnings, []);
    assert.ok(fs.existsSync(path.join(root, 'quarry', 'cgroup.subtree_control')));
    const run = (await support.create({ pids: 64, memoryBytes: 1000, cpus: 1 }))!;
    assert.equal(run.procsFiles.length, 1);
    const dir = path.relative(root, path.dirname(run.procsFiles[0]!));
    assert.equal(read(root, `${dir}/pids.max`), '64');
    assert.equal(read(root, `${dir}/memory.max`), '1000');
    assert.equal(read(root, `${dir}/cpu.max`), '100000 100000');
    fs.writeFileSync(path.join(root, dir, 'memory.events'), 'low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n');
    fs.writeFileSync(path.join(root, dir, 'pids.events'), 'max 7\n');
    assert.deepEqual(await run.stats(), { oomKills: 1, pidsMaxHits: 7 });
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('says what is missing when there is no usable hierarchy', () => {
    const root = fake([]);
    const support = probeCgroups('quarry', () => {}, root);
    assert.equal(support.version, null);
    assert.match(support.warnings.join('\n'), /no cgroup hierarchy found.*fork bomb is stopped only by the timeout/);
    assert.throws(() => probeCgroups('../escape', () => {}, root), /invalid cgroup parent/);
    fs.rmSync(root, { recursive: true, force: true });
  });
});
