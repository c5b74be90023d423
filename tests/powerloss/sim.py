"""Crash states from a trace of the shim (shim.c), ALICE-style.

The trace is replayed over the initial image of the root directory (a copy
taken before the workload ran) into logical operations on inodes:

* data operations on a file: write (offset, bytes), truncate (size);
* name operations on directories: an entry made (create, mkdir, link), an
  entry removed (unlink, rmdir), a rename (one operation on both
  directories, atomic as a journaling file system commits it).

Barrier model (strict POSIX, no ext4 ordering):

* fsync/fdatasync of a file makes every earlier data operation on that file
  durable (its bytes and its size);
* a write through an O_DSYNC/O_SYNC descriptor is durable at once;
* fsync of a directory makes every earlier name operation in it durable (a
  rename: when either of its directories is synced);
* sync/syncfs make everything durable; sync_file_range and msync make nothing
  durable (they do not flush metadata or the device cache).

At a crash point c (after the first c trace records) the durable operations
are applied; of the others (pending, in trace order) the states are: every
prefix; every single operation left out; each pending write torn to a prefix
of 512-byte and of 4 KiB sectors (file-offset aligned), the pending
operations before it applied. The number of states per crash point is
bounded (`max_per_point`); states are deduplicated by the SHA-256 of the
image they produce (paths, kinds, bytes).
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Tuple
from urllib.parse import unquote_to_bytes

O_CREAT = os.O_CREAT
O_TRUNC = os.O_TRUNC
O_DSYNC = os.O_DSYNC
O_SYNC = os.O_SYNC  # includes O_DSYNC's bit on Linux
O_DIRECTORY = os.O_DIRECTORY
FALLOC_FL_KEEP_SIZE = 1
FALLOC_FL_PUNCH_HOLE = 2


class TraceError(Exception):
    """The trace holds something the model cannot replay faithfully."""


@dataclass
class Record:
    index: int
    op: str
    pid: int
    fields: List[str]
    payload: bytes


def read_trace(path: str) -> List[Record]:
    data = open(path, "rb").read()
    out: List[Record] = []
    pos = 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        parts = data[pos:nl].decode("ascii").split(" ")
        n = int(parts[-1])
        payload = data[nl + 1:nl + 1 + n]
        if len(payload) != n:
            raise TraceError(f"{path}: record {len(out)} is cut short")
        out.append(Record(len(out), parts[0], int(parts[1]), parts[2:-1], payload))
        pos = nl + 1 + n
    return out


def _path(field_text: str) -> str:
    return os.fsdecode(unquote_to_bytes(field_text))


@dataclass
class Op:
    index: int            # of its trace record
    kind: str             # write, trunc, link, unlink, rename
    ino: int = 0          # file (data ops) or directory (link/unlink)
    off: int = 0
    data: bytes = b""
    size: int = 0
    name: str = ""
    target: int = 0       # link: the inode the entry names
    dst_dir: int = 0      # rename
    dst_name: str = ""
    exchange: bool = False
    durable_at: Optional[int] = None  # index of the barrier that made it durable

    def dirs(self) -> Tuple[int, ...]:
        if self.kind == "rename":
            return (self.ino, self.dst_dir)
        return (self.ino,)

    def describe(self, names: Dict[int, str]) -> str:
        where = names.get(self.ino, f"inode {self.ino}")
        if self.kind == "write":
            return f"#{self.index} write {where} [{self.off}, {self.off + len(self.data)})"
        if self.kind == "trunc":
            return f"#{self.index} truncate {where} to {self.size}"
        if self.kind == "rename":
            return (f"#{self.index} rename {where}/{self.name} -> "
                    f"{names.get(self.dst_dir, self.dst_dir)}/{self.dst_name}")
        return f"#{self.index} {self.kind} {where}/{self.name}"


@dataclass
class Image:
    """Inodes: files as bytearrays, directories as {name: inode}."""
    files: Dict[int, bytearray] = field(default_factory=dict)
    dirs: Dict[int, Dict[str, int]] = field(default_factory=dict)

    def copy(self) -> "Image":
        return Image({k: bytearray(v) for k, v in self.files.items()},
                     {k: dict(v) for k, v in self.dirs.items()})


ROOT = 1


class Trace:
    """A trace replayed into operations over the initial image of `root`."""

    def __init__(self, root: str, initial: str, records: List[Record]) -> None:
        self.root = root.rstrip("/")
        self.records = records
        self.initial = Image()
        self.names: Dict[int, str] = {ROOT: "."}  # a name of each inode, for reports
        self.next_ino = ROOT + 1
        self.ns: Dict[str, int] = {".": ROOT}    # the volatile name space
        self.initial.dirs[ROOT] = {}
        self._load(initial, ".", ROOT)
        self.ops: List[Op] = []
        self.acks: List[Tuple[int, str]] = []     # (record index, label)
        self.warnings: List[str] = []
        self._replay()

    # -- initial image ---------------------------------------------------------------------
    def _new(self, rel: str, is_dir: bool) -> int:
        ino = self.next_ino
        self.next_ino += 1
        self.names[ino] = rel
        if is_dir:
            self.initial.dirs.setdefault(ino, {})
        return ino

    def _load(self, path: str, rel: str, ino: int) -> None:
        for name in sorted(os.listdir(path)):
            full = os.path.join(path, name)
            child_rel = name if rel == "." else rel + "/" + name
            st = os.lstat(full)
            if stat.S_ISDIR(st.st_mode):
                child = self._new(child_rel, True)
                self._load(full, child_rel, child)
            elif stat.S_ISREG(st.st_mode):
                child = self._new(child_rel, False)
                self.initial.files[child] = bytearray(open(full, "rb").read())
            else:
                continue
            self.initial.dirs[ino][name] = child
            self.ns[child_rel] = child

    # -- replay ----------------------------------------------------------------------------
    def rel(self, abs_path: str) -> Optional[str]:
        if abs_path == self.root:
            return "."
        if abs_path.startswith(self.root + "/"):
            return abs_path[len(self.root) + 1:]
        return None

    def _parent(self, rel: str) -> Tuple[int, str]:
        head, _, name = rel.rpartition("/")
        parent = self.ns.get(head or ".")
        if parent is None:
            raise TraceError(f"no directory for {rel}")
        return parent, name

    def _ns_remove_tree(self, rel: str) -> None:
        for key in [k for k in self.ns if k == rel or k.startswith(rel + "/")]:
            del self.ns[key]

    def _ns_move(self, old: str, new: str) -> None:
        moved = {k: v for k, v in self.ns.items() if k == old or k.startswith(old + "/")}
        for k in moved:
            del self.ns[k]
        for k, v in moved.items():
            self.ns[new + k[len(old):]] = v

    def _replay(self) -> None:
        fds: Dict[Tuple[int, int], Tuple[int, int]] = {}  # (pid, fd) -> (inode, flags)
        dir_inodes = set(self.initial.dirs)
        for r in self.records:
            i, f = r.index, r.fields
            if r.op == "ack":
                self.acks.append((i, r.payload.decode()))
            elif r.op == "open":
                fd, flags, created, rel = int(f[0]), int(f[1]), f[2] == "1", self.rel(_path(f[3]))
                if rel is None:
                    continue
                if rel in self.ns and not created:
                    ino = self.ns[rel]
                    if flags & O_TRUNC and ino not in dir_inodes:
                        self.ops.append(Op(i, "trunc", ino, size=0))
                else:
                    parent, name = self._parent(rel)
                    ino = self._new(rel, False)
                    self.ns[rel] = ino
                    self.ops.append(Op(i, "link", parent, name=name, target=ino))
                fds[(r.pid, fd)] = (ino, flags)
            elif r.op == "dup":
                if (r.pid, int(f[0])) in fds:
                    fds[(r.pid, int(f[1]))] = fds[(r.pid, int(f[0]))]
            elif r.op == "close":
                fds.pop((r.pid, int(f[0])), None)
            elif r.op in ("write", "trunc", "falloc", "fsync", "fdatasync", "sfr", "syncfs",
                          "mmapw"):
                key = (r.pid, int(f[0]))
                if key not in fds:
                    raise TraceError(f"record {i}: {r.op} on fd {f[0]} of pid {r.pid} never opened")
                ino, flags = fds[key]
                if r.op == "write":
                    op = Op(i, "write", ino, off=int(f[1]), data=r.payload)
                    if flags & O_DSYNC:
                        op.durable_at = i
                    self.ops.append(op)
                elif r.op == "trunc":
                    self.ops.append(Op(i, "trunc", ino, size=int(f[1])))
                elif r.op == "falloc":
                    mode, off, length = int(f[1]), int(f[2]), int(f[3])
                    if mode & FALLOC_FL_PUNCH_HOLE:
                        raise TraceError(f"record {i}: fallocate punch-hole is not modelled")
                    if not mode & FALLOC_FL_KEEP_SIZE:
                        self.ops.append(Op(i, "extend", ino, size=off + length))
                elif r.op in ("fsync", "fdatasync"):
                    self._barrier(i, lambda op, ino=ino: (
                        (op.kind in ("write", "trunc", "extend") and op.ino == ino)
                        or (op.kind in ("link", "unlink", "rename") and ino in op.dirs())))
                elif r.op == "syncfs":
                    self._barrier(i, lambda op: True)
                elif r.op == "mmapw":
                    if not self.names.get(ino, "").endswith("lock.mdb"):
                        raise TraceError(f"record {i}: {self.names.get(ino)} is written through "
                                         "a shared mapping, which the shim cannot see")
            elif r.op == "sync":
                self._barrier(i, lambda op: True)
            elif r.op == "msync":
                pass
            elif r.op in ("mkdir", "unlink", "rmdir"):
                rel = self.rel(_path(f[0]))
                if rel is None:
                    continue
                parent, name = self._parent(rel)
                if r.op == "mkdir":
                    ino = self._new(rel, True)
                    dir_inodes.add(ino)
                    self.ns[rel] = ino
                    self.ops.append(Op(i, "link", parent, name=name, target=ino))
                else:
                    self._ns_remove_tree(rel)
                    self.ops.append(Op(i, "unlink", parent, name=name))
            elif r.op == "rename":
                flags = int(f[0])
                a, b = self.rel(_path(f[1])), self.rel(_path(f[2]))
                if a is None or b is None:
                    raise TraceError(f"record {i}: rename across the root: {f[1]} -> {f[2]}")
                pa, na = self._parent(a)
                pb, nb = self._parent(b)
                exchange = bool(flags & 2)  # RENAME_EXCHANGE
                ino = self.ns[a]
                if exchange:
                    other = self.ns[b]
                    self._ns_move(a, "\0tmp")
                    self._ns_move(b, a)
                    self._ns_move("\0tmp", b)
                    del other
                else:
                    self._ns_remove_tree(b)
                    self._ns_move(a, b)
                self.ops.append(Op(i, "rename", pa, name=na, target=ino, dst_dir=pb, dst_name=nb,
                                   exchange=exchange))
            elif r.op == "link":
                a, b = self.rel(_path(f[0])), self.rel(_path(f[1]))
                if a is None or b is None:
                    raise TraceError(f"record {i}: link across the root")
                pb, nb = self._parent(b)
                self.ns[b] = self.ns[a]
                self.ops.append(Op(i, "link", pb, name=nb, target=self.ns[a]))
            elif r.op == "ptrunc":
                raise TraceError(f"record {i}: truncate(2) by path is not modelled")
            else:
                raise TraceError(f"record {i}: unknown op {r.op}")
        self.dir_inodes = dir_inodes

    def _barrier(self, index: int, covers) -> None:
        for op in self.ops:
            if op.durable_at is None and covers(op):
                op.durable_at = index

    # -- crash states ----------------------------------------------------------------------
    def ack_before(self, point: int) -> Optional[str]:
        """The last ack recorded among the first `point` records."""
        last = None
        for index, label in self.acks:
            if index < point:
                last = label
        return last

    def states(self, point: int, max_per_point: int,
               tear_points: int) -> Iterator[Tuple[str, List[Op], Optional[Tuple[Op, int]]]]:
        """Crash states at `point`: (description, operations applied, torn write)."""
        issued = [op for op in self.ops if op.index < point]
        durable = [op for op in issued if op.durable_at is not None and op.durable_at < point]
        pending = [op for op in issued if not (op.durable_at is not None and op.durable_at < point)]
        count = 0

        def chosen(subset: List[Op]) -> List[Op]:
            return sorted(durable + subset, key=lambda o: o.index)

        for j in range(len(pending), -1, -1):
            yield (f"pending prefix {j}/{len(pending)}", chosen(pending[:j]), None)
            count += 1
            if count >= max_per_point:
                return
        if len(pending) > 1:
            for k, op in enumerate(pending):
                yield (f"pending without {op.describe(self.names)}",
                       chosen(pending[:k] + pending[k + 1:]), None)
                count += 1
                if count >= max_per_point:
                    return
        for k, op in enumerate(pending):
            if op.kind != "write" or len(op.data) <= 1:
                continue
            for cut in tear_cuts(op.off, len(op.data), tear_points):
                yield (f"pending prefix {k}/{len(pending)}, torn {op.describe(self.names)} "
                       f"after {cut} bytes", chosen(pending[:k]), (op, cut))
                count += 1
                if count >= max_per_point:
                    return

    def apply(self, ops: List[Op], torn: Optional[Tuple[Op, int]]) -> Image:
        img = self.initial.copy()
        seq = list(ops)
        if torn is not None:
            t, cut = torn
            seq.append(Op(t.index, "write", t.ino, off=t.off, data=t.data[:cut]))
        for op in seq:
            if op.kind == "write":
                buf = img.files.setdefault(op.ino, bytearray())
                end = op.off + len(op.data)
                if len(buf) < op.off:
                    buf.extend(b"\0" * (op.off - len(buf)))
                buf[op.off:end] = op.data
            elif op.kind == "trunc":
                buf = img.files.setdefault(op.ino, bytearray())
                if len(buf) > op.size:
                    del buf[op.size:]
                else:
                    buf.extend(b"\0" * (op.size - len(buf)))
            elif op.kind == "extend":
                buf = img.files.setdefault(op.ino, bytearray())
                if len(buf) < op.size:
                    buf.extend(b"\0" * (op.size - len(buf)))
            elif op.kind == "link":
                img.dirs.setdefault(op.ino, {})[op.name] = op.target
                if op.target in self.dir_inodes:
                    img.dirs.setdefault(op.target, {})
                else:
                    img.files.setdefault(op.target, bytearray())
            elif op.kind == "unlink":
                img.dirs.setdefault(op.ino, {}).pop(op.name, None)
            elif op.kind == "rename":
                src = img.dirs.setdefault(op.ino, {})
                dst = img.dirs.setdefault(op.dst_dir, {})
                if op.exchange:
                    a, b = src.get(op.name), dst.get(op.dst_name)
                    if a is not None and b is not None:
                        src[op.name], dst[op.dst_name] = b, a
                else:
                    # The entry names the inode the rename moved, whether or
                    # not its old entry ever became durable.
                    src.pop(op.name, None)
                    dst[op.dst_name] = op.target
                    if op.target in self.dir_inodes:
                        img.dirs.setdefault(op.target, {})
                    else:
                        img.files.setdefault(op.target, bytearray())
        return img


def tear_cuts(off: int, length: int, most: int) -> List[int]:
    """Byte counts a torn write keeps: the sector (512 B and 4 KiB) boundaries
    inside [off, off + length), at most `most` of each size, spread evenly."""
    cuts = set()
    for sector in (512, 4096):
        first = (off // sector + 1) * sector - off
        bounds = list(range(first, length, sector))
        if len(bounds) > most:
            step = len(bounds) / most
            bounds = [bounds[int(k * step)] for k in range(most - 1)] + [bounds[-1]]
        cuts.update(bounds)
    return sorted(c for c in cuts if 0 < c < length)


def walk(img: Image) -> List[Tuple[str, Optional[bytes]]]:
    """(relative path, bytes or None for a directory) of everything reachable."""
    out: List[Tuple[str, Optional[bytes]]] = []
    seen = set()

    def visit(ino: int, rel: str) -> None:
        if ino in seen:
            return
        seen.add(ino)
        for name in sorted(img.dirs.get(ino, {})):
            child = img.dirs[ino][name]
            child_rel = name if rel == "" else rel + "/" + name
            if child in img.dirs:
                out.append((child_rel, None))
                visit(child, child_rel)
            else:
                out.append((child_rel, bytes(img.files.get(child, b""))))
        seen.discard(ino)

    visit(ROOT, "")
    return out


def image_hash(entries: List[Tuple[str, Optional[bytes]]]) -> str:
    h = hashlib.sha256()
    for rel, data in entries:
        h.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        if data is None:
            h.update(b"d\0")
        else:
            h.update(b"f" + len(data).to_bytes(8, "little") + hashlib.sha256(data).digest())
    return h.hexdigest()


def materialize(entries: List[Tuple[str, Optional[bytes]]], into: str) -> None:
    os.makedirs(into, exist_ok=True)
    for rel, data in entries:
        path = os.path.join(into, rel)
        if data is None:
            os.makedirs(path, exist_ok=True)
        else:
            with open(path, "wb") as f:
                f.write(data)
