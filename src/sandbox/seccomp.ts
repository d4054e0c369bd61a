/**
 * A seccomp filter for sandboxed code (bwrap --seccomp): a deny list of system calls that code
 * doing data work never needs and that are the usual doors into kernel bugs or host state:
 * io_uring, bpf, perf events, userfaultfd, keyrings, ptrace and cross-process memory access,
 * mounting and namespaces (clone with CLONE_NEWUSER too, so this holds even where bwrap lacks
 * --disable-userns), modules, kexec, reboot, swap, clocks. Denied calls fail with EPERM; clone3
 * fails with ENOSYS (libc then uses clone); a system call of a foreign ABI (i386 or x32 on x86_64,
 * arm32 on arm64) kills the process.
 *
 * Numbers come from the kernel's uapi headers (asm/unistd_64.h on x86_64, asm-generic/unistd.h
 * on arm64). On other architectures there is no filter and the probe says so.
 */
import os from 'node:os';

const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_AARCH64 = 0xc00000b7;
const X32_SYSCALL_BIT = 0x40000000;

const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;
const CLONE_NEWUSER = 0x10000000;

const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_JMP_JSET_K = 0x45;
const BPF_RET_K = 0x06;

// seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6]
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
/** The low 32 bits of args[0] (both architectures here are little-endian). */
const OFFSET_ARG0_LOW = 16;

/** clone: allowed unless it asks for a new user namespace. clone3: its flags sit in memory the
 * filter cannot read, so it fails with ENOSYS and libc falls back to clone. */
const CLONE: [number, number] = [56, 220];
const CLONE3: [number, number] = [435, 435];

/** Denied on every architecture: name → [x86_64, arm64]. */
const DENIED: Record<string, [number, number]> = {
  acct: [163, 89],
  add_key: [248, 217],
  adjtimex: [159, 171],
  bpf: [321, 280],
  chroot: [161, 51],
  clock_adjtime: [305, 266],
  clock_settime: [227, 112],
  delete_module: [176, 106],
  finit_module: [313, 273],
  fsconfig: [431, 431],
  fsmount: [432, 432],
  fsopen: [430, 430],
  fspick: [433, 433],
  init_module: [175, 105],
  io_uring_enter: [426, 426],
  io_uring_register: [427, 427],
  io_uring_setup: [425, 425],
  kexec_file_load: [320, 294],
  kexec_load: [246, 104],
  keyctl: [250, 219],
  lookup_dcookie: [212, 18],
  mount: [165, 40],
  mount_setattr: [442, 442],
  move_mount: [429, 429],
  name_to_handle_at: [303, 264],
  nfsservctl: [180, 42],
  open_by_handle_at: [304, 265],
  open_tree: [428, 428],
  perf_event_open: [298, 241],
  pivot_root: [155, 41],
  process_vm_readv: [310, 270],
  process_vm_writev: [311, 271],
  ptrace: [101, 117],
  quotactl: [179, 60],
  quotactl_fd: [443, 443],
  reboot: [169, 142],
  request_key: [249, 218],
  setns: [308, 268],
  settimeofday: [164, 170],
  swapoff: [168, 225],
  swapon: [167, 224],
  syslog: [103, 116],
  umount2: [166, 39],
  unshare: [272, 97],
  userfaultfd: [323, 282],
  vhangup: [153, 58],
};

/** Only x86_64 has these. */
const DENIED_X86_64: Record<string, number> = {
  create_module: 174,
  get_kernel_syms: 177,
  ioperm: 173,
  iopl: 172,
  query_module: 178,
  sysfs: 139,
  _sysctl: 156,
  uselib: 134,
  ustat: 136,
};

export const DENIED_SYSCALLS = [...Object.keys(DENIED), ...Object.keys(DENIED_X86_64)].sort();

interface Insn {
  code: number;
  jt: number;
  jf: number;
  k: number;
}

/** The filter as the raw `struct sock_filter[]` bwrap reads, or null on an unknown architecture. */
export function seccompProgram(arch: string = process.arch): Buffer | null {
  const x86 = arch === 'x64';
  if (!x86 && arch !== 'arm64') return null;
  const numbers = Object.values(DENIED).map(([a, b]) => (x86 ? a : b));
  if (x86) numbers.push(...Object.values(DENIED_X86_64));

  const insns: Insn[] = [
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFFSET_ARCH },
    { code: BPF_JMP_JEQ_K, jt: 1, jf: 0, k: x86 ? AUDIT_ARCH_X86_64 : AUDIT_ARCH_AARCH64 },
    { code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_KILL_PROCESS },
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFFSET_NR },
  ];
  // Forward jumps to the returns at the end, filled in once their positions are known.
  const jumps: { at: number; to: 'deny' | 'enosys' | 'clone' }[] = [];
  const jumpIf = (code: number, k: number, to: 'deny' | 'enosys' | 'clone') => {
    jumps.push({ at: insns.length, to });
    insns.push({ code, jt: 0, jf: 0, k });
  };
  if (x86) jumpIf(BPF_JMP_JGE_K, X32_SYSCALL_BIT, 'deny');
  jumpIf(BPF_JMP_JEQ_K, CLONE3[x86 ? 0 : 1], 'enosys');
  jumpIf(BPF_JMP_JEQ_K, CLONE[x86 ? 0 : 1], 'clone');
  for (const nr of numbers) jumpIf(BPF_JMP_JEQ_K, nr, 'deny');
  insns.push({ code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW });
  const target = { clone: insns.length, deny: insns.length + 3, enosys: insns.length + 4 };
  insns.push(
    { code: BPF_LD_W_ABS, jt: 0, jf: 0, k: OFFSET_ARG0_LOW },
    { code: BPF_JMP_JSET_K, jt: 1, jf: 0, k: CLONE_NEWUSER },
    { code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ALLOW },
    { code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ERRNO | EPERM },
    { code: BPF_RET_K, jt: 0, jf: 0, k: SECCOMP_RET_ERRNO | ENOSYS },
  );
  for (const { at, to } of jumps) {
    const jump = target[to] - at - 1;
    if (jump > 255) throw new Error('seccomp filter too long for short jumps');
    insns[at]!.jt = jump;
  }

  const le = os.endianness() === 'LE';
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach((insn, i) => {
    const at = i * 8;
    if (le) {
      out.writeUInt16LE(insn.code, at);
      out.writeUInt32LE(insn.k >>> 0, at + 4);
    } else {
      out.writeUInt16BE(insn.code, at);
      out.writeUInt32BE(insn.k >>> 0, at + 4);
    }
    out.writeUInt8(insn.jt, at + 2);
    out.writeUInt8(insn.jf, at + 3);
  });
  return out;
}
