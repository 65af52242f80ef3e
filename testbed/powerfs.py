"""powerfs: a FUSE passthrough that forgets, at a power cut, whatever was never made durable.

Run by Debian's python3 (``python3-pyfuse3`` + trio), never imported by edgeprint:
``/usr/bin/python3 testbed/powerfs.py BASE MOUNT SOCKET``. Every live operation passes
through to ``BASE/live``; testbed/powerfs_model.py keeps what a disk would still hold
after the power goes (its docstring states the model). ``testbed.powerfs_control.PowerFs``
drives this process from the venv.

Control socket (one text line in, one JSON line out):

``cut``        power cut, see above (the process exits after answering).
``ok``         normal operation.
``erofs``      every change (write, truncate, create, mkdir, rename, unlink, rmdir, symlink,
               chmod, open for writing, fsync, fsyncdir) fails with EROFS; reads work.
``eio``        writes, truncates, fsync and fsyncdir fail with EIO; the rest works.
``fsync-eio``  only fsync, fdatasync and fsyncdir fail with EIO (pending data dropped).
``stats``      counters: mode, fsyncs, fsyncdirs, writes, pending_bytes, injected errors.
``stop``       unmount and exit, keeping the live folder as it is (no cut).
Every answer carries the counters.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import stat
import sys
import traceback
from collections.abc import Callable
from typing import Any

import pyfuse3
import trio

if __package__ in (None, ""):  # run as a script: make testbed importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from testbed.powerfs_model import MODES, Model, Node

TIMEOUT_S = 1.0


def _op(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A synchronous body as a pyfuse3 handler: frozen after a cut, OSError → errno."""

    async def handler(self: PowerFs, *args: Any) -> Any:
        if self.frozen:
            raise pyfuse3.FUSEError(errno.EIO)
        try:
            return fn(self, *args)
        except OSError as e:
            raise pyfuse3.FUSEError(e.errno or errno.EIO) from None
        except Exception:  # a bug here: an EIO to the caller, the trace to the log
            traceback.print_exc()
            raise pyfuse3.FUSEError(errno.EIO) from None

    handler.__name__ = fn.__name__
    return handler


class PowerFs(Model, pyfuse3.Operations):  # type: ignore[misc]
    enable_writeback_cache = False

    def __init__(self, base: str) -> None:
        pyfuse3.Operations.__init__(self)
        Model.__init__(self, base)

    # -- attributes --------------------------------------------------------------------

    def _attr(self, node: Node) -> Any:
        path = self._path(node)
        if path is not None:
            st = os.lstat(path)
        elif node.fds:
            st = os.fstat(next(iter(node.fds.values())))
        else:
            raise OSError(errno.ENOENT, "gone")
        entry = pyfuse3.EntryAttributes()
        for name in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_rdev", "st_size"):
            setattr(entry, name, getattr(st, name))
        entry.st_ino = node.ino
        entry.generation = 0
        entry.entry_timeout = TIMEOUT_S
        entry.attr_timeout = TIMEOUT_S
        entry.st_blksize = 4096
        entry.st_blocks = (st.st_size + 511) // 512
        entry.st_atime_ns = st.st_atime_ns
        entry.st_mtime_ns = st.st_mtime_ns
        entry.st_ctime_ns = st.st_ctime_ns
        return entry

    # -- operations ----------------------------------------------------------------------

    @_op
    def lookup(self, parent_inode: int, name: bytes, ctx: Any = None) -> Any:
        parent = self.nodes[parent_inode]
        if name == b".":
            return self._attr(parent)
        if name == b"..":
            up = parent.links[0][0] if parent.links else pyfuse3.ROOT_INODE
            return self._attr(self.nodes[up])
        ino = parent.children.get(name)
        if ino is None:
            raise OSError(errno.ENOENT, "no entry")
        return self._attr(self.nodes[ino])

    @_op
    def getattr(self, inode: int, ctx: Any = None) -> Any:
        return self._attr(self.nodes[inode])

    @_op
    def setattr(self, inode: int, attr: Any, fields: Any, fh: int | None, ctx: Any) -> Any:
        node = self.nodes[inode]
        path = self._path(node)
        target: int | bytes
        if fh is not None and fh in node.fds:
            target = node.fds[fh]
        elif path is not None:
            target = path
        elif node.fds:
            target = next(iter(node.fds.values()))
        else:
            raise OSError(errno.ENOENT, "gone")
        if fields.update_size:
            self._fault("data")
            self._ensure_shadow(node)
            old = os.stat(target).st_size
            os.truncate(target, attr.st_size)
            if old != attr.st_size:
                node.dirty.append((min(old, attr.st_size), max(old, attr.st_size)))
        if fields.update_mode:
            self._fault("meta")
            os.chmod(target, stat.S_IMODE(attr.st_mode))
            node.mode = stat.S_IMODE(attr.st_mode)
        if fields.update_uid or fields.update_gid:
            self._fault("meta")
            os.chown(
                target,
                attr.st_uid if fields.update_uid else -1,
                attr.st_gid if fields.update_gid else -1,
            )
        if fields.update_atime or fields.update_mtime:
            self._fault("meta")
            st = os.stat(target)
            os.utime(
                target,
                ns=(
                    attr.st_atime_ns if fields.update_atime else st.st_atime_ns,
                    attr.st_mtime_ns if fields.update_mtime else st.st_mtime_ns,
                ),
            )
        return self._attr(node)

    @_op
    def readlink(self, inode: int, ctx: Any) -> bytes:
        return self.nodes[inode].target

    @_op
    def mkdir(self, parent_inode: int, name: bytes, mode: int, ctx: Any) -> Any:
        self._fault("meta")
        parent = self.nodes[parent_inode]
        os.mkdir(self._child_path(parent, name), stat.S_IMODE(mode))
        node = self._new("d", parent, name, mode)
        return self._attr(node)

    @_op
    def symlink(self, parent_inode: int, name: bytes, target: bytes, ctx: Any) -> Any:
        self._fault("meta")
        parent = self.nodes[parent_inode]
        os.symlink(target, self._child_path(parent, name))
        node = self._new("l", parent, name, 0o777)
        node.target = target
        return self._attr(node)

    def _detach(self, parent: Node, name: bytes) -> None:
        """An entry leaves the live tree; its durable bytes stay in the shadow."""
        ino = parent.children.pop(name)
        node = self.nodes[ino]
        self._ensure_shadow(node)
        node.links.remove((parent.ino, name))

    @_op
    def unlink(self, parent_inode: int, name: bytes, ctx: Any) -> None:
        self._fault("meta")
        parent = self.nodes[parent_inode]
        if name not in parent.children:
            raise OSError(errno.ENOENT, "no entry")
        path = self._child_path(parent, name)
        self._ensure_shadow(self.nodes[parent.children[name]])
        os.unlink(path)
        self._detach(parent, name)

    @_op
    def rmdir(self, parent_inode: int, name: bytes, ctx: Any) -> None:
        self._fault("meta")
        parent = self.nodes[parent_inode]
        if name not in parent.children:
            raise OSError(errno.ENOENT, "no entry")
        os.rmdir(self._child_path(parent, name))
        self._detach(parent, name)

    @_op
    def rename(
        self,
        parent_old: int,
        name_old: bytes,
        parent_new: int,
        name_new: bytes,
        flags: int,
        ctx: Any,
    ) -> None:
        self._fault("meta")
        old, new = self.nodes[parent_old], self.nodes[parent_new]
        if name_old not in old.children:
            raise OSError(errno.ENOENT, "no entry")
        if flags & pyfuse3.RENAME_EXCHANGE:
            raise OSError(errno.EINVAL, "RENAME_EXCHANGE not modelled")
        if flags & pyfuse3.RENAME_NOREPLACE and name_new in new.children:
            raise OSError(errno.EEXIST, "exists")
        victim = new.children.get(name_new)
        if victim == old.children[name_old]:
            return  # two names of one file: POSIX says rename does nothing
        if victim is not None:
            self._ensure_shadow(self.nodes[victim])
        os.rename(self._child_path(old, name_old), self._child_path(new, name_new))
        if victim is not None:
            self._detach(new, name_new)
        ino = old.children.pop(name_old)
        new.children[name_new] = ino
        node = self.nodes[ino]
        node.links[node.links.index((old.ino, name_old))] = (new.ino, name_new)

    @_op
    def link(self, inode: int, new_parent: int, new_name: bytes, ctx: Any) -> Any:
        """A second name: pending in its folder like a create (both names hold one inode)."""
        self._fault("meta")
        node, parent = self.nodes[inode], self.nodes[new_parent]
        if node.kind == "d":
            raise OSError(errno.EPERM, "no hard links to folders")
        if new_name in parent.children:
            raise OSError(errno.EEXIST, "exists")
        src = self._path(node)
        if src is None:
            raise OSError(errno.ENOENT, "unlinked")
        os.link(src, self._child_path(parent, new_name))
        parent.children[new_name] = node.ino
        node.links.append((parent.ino, new_name))
        return self._attr(node)

    def _open_fd(self, node: Node, flags: int) -> int:
        path = self._path(node)
        if path is None:
            if not node.fds:
                raise OSError(errno.ENOENT, "gone")
            path = os.fsencode(f"/proc/self/fd/{next(iter(node.fds.values()))}")
        fd = os.open(path, os.O_RDWR)
        fh = self.next_fh
        self.next_fh += 1
        node.fds[fh] = fd
        self.fh_node[fh] = node
        if flags & os.O_TRUNC:
            self._fault("data")
            self._ensure_shadow(node)
            old = os.fstat(fd).st_size
            os.ftruncate(fd, 0)
            if old:
                node.dirty.append((0, old))
        return fh

    @_op
    def open(self, inode: int, flags: int, ctx: Any) -> Any:
        node = self.nodes[inode]
        if flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC:
            self._fault("meta")
        return pyfuse3.FileInfo(fh=self._open_fd(node, flags))

    @_op
    def create(self, parent_inode: int, name: bytes, mode: int, flags: int, ctx: Any) -> Any:
        self._fault("meta")
        parent = self.nodes[parent_inode]
        ino = parent.children.get(name)
        if ino is not None:
            if flags & os.O_EXCL:
                raise OSError(errno.EEXIST, "exists")
            node = self.nodes[ino]
        else:
            path = self._child_path(parent, name)
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, stat.S_IMODE(mode)))
            node = self._new("f", parent, name, mode)
            node.shadowed = True  # durable bytes: none (no shadow file = empty)
        fh = self._open_fd(node, flags)
        return pyfuse3.FileInfo(fh=fh), self._attr(node)

    @_op
    def read(self, fh: int, off: int, size: int) -> bytes:
        return os.pread(self.fh_node[fh].fds[fh], size, off)

    @_op
    def write(self, fh: int, off: int, buf: bytes) -> int:
        self._fault("data")
        node = self.fh_node[fh]
        self._ensure_shadow(node)
        n = os.pwrite(node.fds[fh], buf, off)
        node.dirty.append((off, off + n))
        self.counters["writes"] += 1
        self.counters["written_bytes"] += n
        return n

    @_op
    def flush(self, fh: int) -> None:
        return None

    @_op
    def release(self, fh: int) -> None:
        node = self.fh_node.pop(fh, None)
        if node is not None:
            os.close(node.fds.pop(fh))

    @_op
    def fsync(self, fh: int, datasync: bool) -> None:
        node = self.fh_node[fh]
        try:
            self._fault("sync")
        except OSError:
            node.dirty = []  # write-back error: the pages are clean, the disk never got them
            raise
        self._make_durable(node)
        self.counters["fsyncs"] += 1

    @_op
    def opendir(self, inode: int, ctx: Any) -> int:
        return inode

    @_op
    def readdir(self, fh: int, start_id: int, token: Any) -> None:
        folder = self.nodes[fh]
        entries = sorted(folder.children.items())
        for i in range(start_id, len(entries)):
            name, ino = entries[i]
            if not pyfuse3.readdir_reply(token, name, self._attr(self.nodes[ino]), i + 1):
                break

    @_op
    def releasedir(self, fh: int) -> None:
        return None

    @_op
    def fsyncdir(self, fh: int, datasync: bool) -> None:
        self._fault("sync")
        folder = self.nodes[fh]
        folder.durable = dict(folder.children)
        self.counters["fsyncdirs"] += 1

    @_op
    def statfs(self, ctx: Any) -> Any:
        st = os.statvfs(self.live)
        out = pyfuse3.StatvfsData()
        for name in (
            "f_bsize",
            "f_frsize",
            "f_blocks",
            "f_bfree",
            "f_bavail",
            "f_files",
            "f_ffree",
            "f_favail",
            "f_namemax",
        ):
            setattr(out, name, getattr(st, name))
        return out

    @_op
    def access(self, inode: int, mode: int, ctx: Any) -> bool:
        return True

    async def forget(self, inode_list: Any) -> None:
        return None  # nodes stay: a durable entry may still name an unlinked inode


async def _control(fs: PowerFs, sock: Any, done: Any) -> None:
    while True:
        conn, _ = await sock.accept()
        with conn:
            data = b""
            while not data.endswith(b"\n"):
                chunk = await conn.recv(1024)
                if not chunk:
                    break
                data += chunk
            cmd = data.decode().strip()
            reply: dict[str, Any] = {"ok": True, "command": cmd}
            finish = False
            try:
                if cmd in MODES:
                    fs.mode = cmd
                elif cmd == "cut":
                    reply["rebuilt"] = fs.rebuild()
                    finish = True
                elif cmd == "stop":
                    fs.frozen = True
                    finish = True
                elif cmd != "stats":
                    reply = {"ok": False, "command": cmd, "error": "unknown command"}
            except Exception as e:
                reply = {"ok": False, "command": cmd, "error": repr(e)}
            reply.update(fs.stats())
            out = json.dumps(reply).encode() + b"\n"
            while out:
                out = out[await conn.send(out) :]
        if finish:
            done.set()
            return


async def _run(fs: PowerFs, sock_path: str) -> None:
    sock = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await sock.bind(sock_path)
    sock.listen(4)
    done = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pyfuse3.main)
        nursery.start_soon(_control, fs, sock, done)
        print(json.dumps({"event": "ready", "pid": os.getpid()}), flush=True)
        await done.wait()
        pyfuse3.terminate()
    sock.close()


def main() -> None:
    base, mount, sock_path = sys.argv[1:4]
    fs = PowerFs(base)
    if os.path.exists(sock_path):
        os.unlink(sock_path)
    options = set(pyfuse3.default_options)
    options.add("fsname=powerfs")
    pyfuse3.init(fs, mount, options)
    try:
        trio.run(_run, fs, sock_path)
    finally:
        pyfuse3.close(unmount=True)


if __name__ == "__main__":
    main()
