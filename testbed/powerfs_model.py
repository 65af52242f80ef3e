"""powerfs' model of durability: what a disk still holds after the power goes.

Stdlib only, used by testbed/powerfs.py (the FUSE process, run by Debian's python3).

The durability model (strict POSIX, harsher than ext4):

* File data: a write or a truncate is *pending* until ``fsync``/``fdatasync`` of that file
  (any descriptor of it). A fsync makes the file's data and size durable, nothing else:
  not its name. A file created since the last cut and never fsync'ed is empty after one.
* Directory entries: create, mkdir, symlink, rename, unlink and rmdir are pending until
  the *parent directory* is fsync'ed (``fsyncdir``). A rename between two folders is two
  pending changes, one per folder; each becomes durable with its own folder's fsync (with
  only the target's fsync'ed, the file has both names after a cut).
* Hard links: a new name is pending in its folder like a create; after a cut two durable
  names of one file are two files with the same bytes (nothing here relies on sharing).
* Modes and owners are kept as they are live (nobody relies on them across a cut here).
* A failed fsync (``fsync-eio``) drops the pending data it was asked to write: the
  following fsync succeeds without making it durable, as Linux does after a write-back
  error ("fsyncgate"); the live file still reads the new bytes (the page cache).

ext4 (data=ordered, the Debian default) is kinder: a fsync commits the running journal
transaction, which makes a new file's directory entry durable with it, and
``auto_da_alloc`` flushes a file's data on a rename over an existing file. LazyFS, the
reference for this kind of test, keeps unsynced data in its own page cache and drops it
at a "clear-cache" fault; it models file data, and by default not lost directory entries.
This model also loses unsynced directory entries, so a program that passes it is correct
on any POSIX filesystem, not only on ext4's extra promises.

How: per file, the durable bytes live in ``BASE/shadow/<ino>`` (copied from the live file
on its first change after mount; pending byte ranges are copied in at fsync). Per folder,
the durable entries are a name → inode map, replaced by the live map at fsyncdir. A cut
(``cut`` on the control socket, after the controller has SIGKILLed the program using the
mount) freezes every operation (EIO), builds ``BASE/live`` anew from the model (a
durable entry whose file never had a durable byte is an empty file, as on a real disk),
answers, unmounts and exits; the controller mounts again on the rebuilt folder. The
kernel's write-back cache is off, so every write reaches this process; the kernel's own
POSIX locks serve SQLite (no lock operations here); its ``-shm`` mmap writes arrive as
writes and, never fsync'ed, are lost at a cut as on a real machine.
"""

from __future__ import annotations

import errno
import os
import shutil
import stat
from typing import Any

ROOT_INODE = 1  # pyfuse3.ROOT_INODE, FUSE_ROOT_ID
MODES = ("ok", "erofs", "eio", "fsync-eio")


class Node:
    """One inode of the live tree, with what of it is durable."""

    def __init__(self, ino: int, kind: str, parent: int | None, name: bytes, mode: int) -> None:
        self.ino = ino
        self.kind = kind  # "f" file, "d" folder, "l" symlink
        #: live names (folder inode, name): one, or more for hard links; none once unlinked
        self.links: list[tuple[int, bytes]] = [] if parent is None else [(parent, name)]
        self.mode = mode
        self.target = b""
        self.children: dict[bytes, int] = {}  # folders: live entries
        self.durable: dict[bytes, int] = {}  # folders: entries as of the last fsyncdir
        self.dirty: list[tuple[int, int]] = []  # files: pending byte ranges
        self.shadowed = False  # files: BASE/shadow/<ino> holds the durable bytes
        self.fds: dict[int, int] = {}  # fh → backing descriptor


class Model:
    """The live tree (passed through to BASE/live) and its durable shadow."""

    def __init__(self, base: str) -> None:
        self.live = os.path.join(base, "live")
        self.shadow = os.path.join(base, "shadow")
        self.base = base
        os.makedirs(self.live, exist_ok=True)
        shutil.rmtree(self.shadow, ignore_errors=True)
        os.makedirs(self.shadow)
        self.nodes: dict[int, Node] = {}
        self.fh_node: dict[int, Node] = {}
        self.next_ino = ROOT_INODE + 1
        self.next_fh = 1
        self.frozen = False
        self.mode = "ok"
        self.counters = {
            "fsyncs": 0,
            "fsyncdirs": 0,
            "writes": 0,
            "written_bytes": 0,
            "injected_errors": 0,
        }
        root = Node(ROOT_INODE, "d", None, b"", os.stat(self.live).st_mode)
        self.nodes[root.ino] = root
        self._scan(root, os.fsencode(self.live))

    # -- the model ---------------------------------------------------------------------

    def _scan(self, folder: Node, path: bytes) -> None:
        """At mount, everything in the backing folder is durable (the disk after boot)."""
        for entry in os.scandir(path):
            st = entry.stat(follow_symlinks=False)
            kind = "d" if stat.S_ISDIR(st.st_mode) else "l" if stat.S_ISLNK(st.st_mode) else "f"
            node = self._new(kind, folder, entry.name, st.st_mode)
            if kind == "l":
                node.target = os.readlink(entry.path)
            if kind == "d":
                self._scan(node, entry.path)
            folder.durable[entry.name] = node.ino

    def _new(self, kind: str, parent: Node, name: bytes, mode: int) -> Node:
        node = Node(self.next_ino, kind, parent.ino, name, stat.S_IMODE(mode))
        self.next_ino += 1
        self.nodes[node.ino] = node
        parent.children[name] = node.ino
        return node

    def _path(self, node: Node) -> bytes | None:
        parts: list[bytes] = []
        while node.ino != ROOT_INODE:
            if not node.links:
                return None
            parent, name = node.links[0]
            parts.append(name)
            node = self.nodes[parent]
        return os.path.join(os.fsencode(self.live), *reversed(parts))

    def _child_path(self, parent: Node, name: bytes) -> bytes:
        path = self._path(parent)
        if path is None:
            raise OSError(errno.ENOENT, "folder removed")
        return os.path.join(path, name)

    def _shadow_path(self, node: Node) -> str:
        return os.path.join(self.shadow, str(node.ino))

    def _ensure_shadow(self, node: Node) -> None:
        """Before the first change to a file since mount: keep its durable bytes aside."""
        if node.kind != "f" or node.shadowed:
            return
        src = self._path(node)
        if src is None:  # unlinked yet still open: read through a descriptor
            src = os.fsencode(f"/proc/self/fd/{next(iter(node.fds.values()))}")
        shutil.copyfile(src, self._shadow_path(node))
        node.shadowed = True

    def _live_fd(self, node: Node) -> tuple[int, bool]:
        if node.fds:
            return next(iter(node.fds.values())), False
        path = self._path(node)
        if path is None:
            raise OSError(errno.ENOENT, "no descriptor")
        return os.open(path, os.O_RDONLY), True

    def _make_durable(self, node: Node) -> None:
        """fsync: the pending ranges and the size reach the shadow."""
        if not node.shadowed or not node.dirty:
            node.dirty = []
            return
        fd, owned = self._live_fd(node)
        try:
            size = os.fstat(fd).st_size
            out = os.open(self._shadow_path(node), os.O_RDWR | os.O_CREAT, 0o600)
            try:
                for a, b in _merge(node.dirty):
                    end = min(b, size)
                    pos = a
                    while pos < end:
                        chunk = os.pread(fd, min(end - pos, 1 << 20), pos)
                        if not chunk:
                            break
                        os.pwrite(out, chunk, pos)
                        pos += len(chunk)
                os.ftruncate(out, size)
            finally:
                os.close(out)
        finally:
            if owned:
                os.close(fd)
        node.dirty = []

    def pending_bytes(self) -> int:
        total = sum(b - a for n in self.nodes.values() for a, b in _merge(n.dirty))
        return total

    def pending_entries(self) -> int:
        return sum(
            len(set(n.children.items()) ^ set(n.durable.items()))
            for n in self.nodes.values()
            if n.kind == "d"
        )

    def stats(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            **self.counters,
            "pending_bytes": self.pending_bytes(),
            "pending_entries": self.pending_entries(),
        }

    def rebuild(self) -> dict[str, int]:
        """The power cut: BASE/live becomes what the model says a disk would hold."""
        self.frozen = True
        for node in self.nodes.values():
            for fd in node.fds.values():
                os.close(fd)
            node.fds.clear()
        self.fh_node.clear()
        new = os.path.join(self.base, "live.new")
        shutil.rmtree(new, ignore_errors=True)
        placed: dict[int, str] = {}
        counts = {"files": 0, "folders": 0, "empty_files": 0}

        def place(node: Node, dst: str) -> None:
            if node.ino in placed:  # a second durable name (half-durable cross-folder rename)
                if node.kind == "f":
                    shutil.copyfile(placed[node.ino], dst)
                    os.chmod(dst, node.mode)
                return
            if node.kind == "d":
                os.mkdir(dst)
                counts["folders"] += 1
                placed[node.ino] = dst
                for name, ino in node.durable.items():
                    place(self.nodes[ino], os.path.join(dst, os.fsdecode(name)))
                os.chmod(dst, node.mode)
                return
            if node.kind == "l":
                os.symlink(node.target, dst)
                placed[node.ino] = dst
                return
            live = self._path(node)
            src = self._shadow_path(node) if node.shadowed else live and os.fsdecode(live)
            if src and os.path.exists(src):
                os.rename(src, dst)  # the live and shadow folders are dropped just after
            else:
                open(dst, "wb").close()  # a durable name, never a durable byte
                counts["empty_files"] += 1
            os.chmod(dst, node.mode)
            counts["files"] += 1
            placed[node.ino] = dst

        place(self.nodes[ROOT_INODE], new)
        old = os.path.join(self.base, "live.old")
        shutil.rmtree(old, ignore_errors=True)
        os.rename(self.live, old)
        os.rename(new, self.live)
        shutil.rmtree(old, ignore_errors=True)
        shutil.rmtree(self.shadow, ignore_errors=True)
        return counts

    def _fault(self, kind: str) -> None:
        """Injected errors: kind is "meta" (a change of entries), "data" or "sync"."""
        failing = {
            "erofs": ("meta", "data", "sync"),
            "eio": ("data", "sync"),
            "fsync-eio": ("sync",),
        }.get(self.mode, ())
        if kind in failing:
            self.counters["injected_errors"] += 1
            raise OSError(errno.EROFS if self.mode == "erofs" else errno.EIO, self.mode)


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out
