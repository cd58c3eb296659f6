//! A fault-injecting FUSE file system for the disk tests: it passes every operation through to a
//! backing directory and, while a fault is switched on, answers EIO to reads, writes or fsyncs of the
//! files whose path contains a given text. It runs in the test process (one thread, `fuser` without
//! libfuse, mounted with mount(2), so root is needed); the broker under test opens, writes with
//! O_DIRECT through io_uring and syncs its store on it like on any disk. Every open is answered with
//! `FOPEN_DIRECT_IO`, so no page cache sits between the broker and this server: a read the broker
//! makes reaches `read` here.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    consts::FOPEN_DIRECT_IO, FileAttr, FileType, Filesystem, MountOption, ReplyAttr, ReplyCreate,
    ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, Request,
    TimeOrNow,
};

const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = 1;

/// What fails, switched by the test while the broker runs.
#[derive(Default)]
pub struct Faults {
    pub writes: AtomicBool,
    pub fsyncs: AtomicBool,
    pub reads: AtomicBool,
    /// Only files whose path (relative to the mount) contains this fail.
    pub path_contains: Mutex<String>,
    /// EIOs answered so far.
    pub injected: AtomicU64,
}

impl Faults {
    fn hits(&self, switch: &AtomicBool, path: &Path) -> bool {
        let on = switch.load(Ordering::SeqCst)
            && self
                .path_contains
                .lock()
                .map(|p| path.to_string_lossy().contains(p.as_str()))
                .unwrap_or(false);
        if on {
            self.injected.fetch_add(1, Ordering::SeqCst);
        }
        on
    }
}

struct FaultFs {
    backing: PathBuf,
    faults: Arc<Faults>,
    /// inode -> path relative to the mount.
    paths: HashMap<u64, PathBuf>,
    inodes: HashMap<PathBuf, u64>,
    next_ino: u64,
    /// file handle -> (open backing file, its relative path).
    files: HashMap<u64, (File, PathBuf)>,
    next_fh: u64,
}

fn errno(e: &std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn time(secs: i64, nanos: i64) -> SystemTime {
    UNIX_EPOCH + Duration::new(secs.max(0) as u64, nanos.clamp(0, 999_999_999) as u32)
}

impl FaultFs {
    fn real(&self, rel: &Path) -> PathBuf {
        self.backing.join(rel)
    }

    fn ino_of(&mut self, rel: &Path) -> u64 {
        if let Some(&ino) = self.inodes.get(rel) {
            return ino;
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        self.inodes.insert(rel.to_path_buf(), ino);
        self.paths.insert(ino, rel.to_path_buf());
        ino
    }

    fn forget_path(&mut self, rel: &Path) {
        if let Some(ino) = self.inodes.remove(rel) {
            self.paths.remove(&ino);
        }
    }

    fn attr(&mut self, rel: &Path) -> std::io::Result<FileAttr> {
        let md = std::fs::symlink_metadata(self.real(rel))?;
        let kind = if md.is_dir() {
            FileType::Directory
        } else if md.file_type().is_symlink() {
            FileType::Symlink
        } else {
            FileType::RegularFile
        };
        let ino = if rel.as_os_str().is_empty() {
            ROOT
        } else {
            self.ino_of(rel)
        };
        Ok(FileAttr {
            ino,
            size: md.size(),
            blocks: md.blocks(),
            atime: time(md.atime(), md.atime_nsec()),
            mtime: time(md.mtime(), md.mtime_nsec()),
            ctime: time(md.ctime(), md.ctime_nsec()),
            crtime: time(md.ctime(), md.ctime_nsec()),
            kind,
            perm: (md.permissions().mode() & 0o7777) as u16,
            nlink: md.nlink() as u32,
            uid: md.uid(),
            gid: md.gid(),
            rdev: md.rdev() as u32,
            blksize: 4096,
            flags: 0,
        })
    }

    fn child(&self, parent: u64, name: &OsStr) -> Option<PathBuf> {
        self.paths.get(&parent).map(|p| p.join(name))
    }

    fn open_fh(&mut self, rel: PathBuf, flags: i32, create: bool) -> std::io::Result<u64> {
        let acc = flags & libc::O_ACCMODE;
        // The backing file is written through the page cache; fsync here makes it durable. O_DIRECT
        // is this file system's business (FOPEN_DIRECT_IO), not the backing file's.
        let extra = flags & !(libc::O_ACCMODE | libc::O_DIRECT | libc::O_CREAT | libc::O_EXCL);
        let file = OpenOptions::new()
            .read(acc == libc::O_RDONLY || acc == libc::O_RDWR)
            .write(acc == libc::O_WRONLY || acc == libc::O_RDWR)
            .create(create)
            .custom_flags(extra)
            .mode(0o644)
            .open(self.real(&rel))?;
        let fh = self.next_fh;
        self.next_fh += 1;
        self.files.insert(fh, (file, rel));
        Ok(fh)
    }
}

impl Filesystem for FaultFs {
    fn lookup(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEntry) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        match self.attr(&rel) {
            Ok(a) => reply.entry(&TTL, &a, 0),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn getattr(&mut self, _req: &Request<'_>, ino: u64, _fh: Option<u64>, reply: ReplyAttr) {
        let Some(rel) = self.paths.get(&ino).cloned() else {
            return reply.error(libc::ENOENT);
        };
        match self.attr(&rel) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn setattr(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<u64>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<u32>,
        reply: ReplyAttr,
    ) {
        let Some(rel) = self.paths.get(&ino).cloned() else {
            return reply.error(libc::ENOENT);
        };
        let real = self.real(&rel);
        let res = (|| {
            if let Some(size) = size {
                OpenOptions::new().write(true).open(&real)?.set_len(size)?;
            }
            if let Some(mode) = mode {
                std::fs::set_permissions(&real, std::fs::Permissions::from_mode(mode & 0o7777))?;
            }
            Ok::<_, std::io::Error>(())
        })();
        match res.and_then(|()| self.attr(&rel)) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn mkdir(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        match std::fs::create_dir(self.real(&rel)).and_then(|()| self.attr(&rel)) {
            Ok(a) => reply.entry(&TTL, &a, 0),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn unlink(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        match std::fs::remove_file(self.real(&rel)) {
            Ok(()) => {
                self.forget_path(&rel);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn rmdir(&mut self, _req: &Request<'_>, parent: u64, name: &OsStr, reply: ReplyEmpty) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        match std::fs::remove_dir(self.real(&rel)) {
            Ok(()) => {
                self.forget_path(&rel);
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn rename(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        newparent: u64,
        newname: &OsStr,
        _flags: u32,
        reply: ReplyEmpty,
    ) {
        let (Some(from), Some(to)) = (self.child(parent, name), self.child(newparent, newname))
        else {
            return reply.error(libc::ENOENT);
        };
        match std::fs::rename(self.real(&from), self.real(&to)) {
            Ok(()) => {
                self.forget_path(&to);
                if let Some(ino) = self.inodes.remove(&from) {
                    self.inodes.insert(to.clone(), ino);
                    self.paths.insert(ino, to);
                }
                reply.ok()
            }
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&mut self, _req: &Request<'_>, ino: u64, flags: i32, reply: ReplyOpen) {
        let Some(rel) = self.paths.get(&ino).cloned() else {
            return reply.error(libc::ENOENT);
        };
        match self.open_fh(rel, flags, false) {
            Ok(fh) => reply.opened(fh, FOPEN_DIRECT_IO),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn create(
        &mut self,
        _req: &Request<'_>,
        parent: u64,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let Some(rel) = self.child(parent, name) else {
            return reply.error(libc::ENOENT);
        };
        let opened = self.open_fh(rel.clone(), flags, true);
        match opened.and_then(|fh| Ok((fh, self.attr(&rel)?))) {
            Ok((fh, a)) => reply.created(&TTL, &a, 0, fh, FOPEN_DIRECT_IO),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn read(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        size: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyData,
    ) {
        let Some((file, rel)) = self.files.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        if self.faults.hits(&self.faults.reads, rel) {
            return reply.error(libc::EIO);
        }
        let mut buf = vec![0u8; size as usize];
        let mut got = 0;
        while got < buf.len() {
            match file.read_at(&mut buf[got..], offset as u64 + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return reply.error(errno(&e)),
            }
        }
        reply.data(&buf[..got]);
    }

    fn write(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        data: &[u8],
        _write_flags: u32,
        _flags: i32,
        _lock_owner: Option<u64>,
        reply: ReplyWrite,
    ) {
        let Some((file, rel)) = self.files.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        if self.faults.hits(&self.faults.writes, rel) {
            return reply.error(libc::EIO);
        }
        match file.write_all_at(data, offset as u64) {
            Ok(()) => reply.written(data.len() as u32),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn flush(&mut self, _req: &Request<'_>, _ino: u64, _fh: u64, _lock: u64, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        _flags: i32,
        _lock_owner: Option<u64>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.files.remove(&fh);
        reply.ok();
    }

    fn fsync(&mut self, _req: &Request<'_>, _ino: u64, fh: u64, datasync: bool, reply: ReplyEmpty) {
        let Some((file, rel)) = self.files.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        if self.faults.hits(&self.faults.fsyncs, rel) {
            return reply.error(libc::EIO);
        }
        let res = if datasync {
            file.sync_data()
        } else {
            file.sync_all()
        };
        match res {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &mut self,
        _req: &Request<'_>,
        ino: u64,
        _fh: u64,
        offset: i64,
        mut reply: ReplyDirectory,
    ) {
        let Some(rel) = self.paths.get(&ino).cloned() else {
            return reply.error(libc::ENOENT);
        };
        let entries = match std::fs::read_dir(self.real(&rel)) {
            Ok(rd) => rd,
            Err(e) => return reply.error(errno(&e)),
        };
        let mut all = vec![
            (ino, FileType::Directory, OsStr::new(".").to_os_string()),
            (ino, FileType::Directory, OsStr::new("..").to_os_string()),
        ];
        for entry in entries.flatten() {
            let name = entry.file_name();
            let kind = match entry.file_type() {
                Ok(t) if t.is_dir() => FileType::Directory,
                _ => FileType::RegularFile,
            };
            let child = self.ino_of(&rel.join(&name));
            all.push((child, kind, name));
        }
        for (i, (child, kind, name)) in all.into_iter().enumerate().skip(offset as usize) {
            if reply.add(child, (i + 1) as i64, kind, &name) {
                break;
            }
        }
        reply.ok();
    }

    fn statfs(&mut self, _req: &Request<'_>, _ino: u64, reply: ReplyStatfs) {
        // SAFETY: statvfs writes into the zeroed local struct; the path is a NUL-terminated copy.
        let st = unsafe {
            let path = std::ffi::CString::new(self.backing.as_os_str().as_bytes()).unwrap();
            let mut st: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(path.as_ptr(), &mut st) != 0 {
                return reply.error(libc::EIO);
            }
            st
        };
        reply.statfs(
            st.f_blocks,
            st.f_bfree,
            st.f_bavail,
            st.f_files,
            st.f_ffree,
            st.f_bsize as u32,
            255,
            st.f_frsize as u32,
        );
    }

    fn fallocate(
        &mut self,
        _req: &Request<'_>,
        _ino: u64,
        fh: u64,
        offset: i64,
        length: i64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let Some((file, _)) = self.files.get(&fh) else {
            return reply.error(libc::EBADF);
        };
        // SAFETY: fallocate on an fd this struct owns; plain integer arguments.
        let rc = unsafe { libc::fallocate(file.as_raw_fd(), mode, offset, length) };
        if rc == 0 {
            reply.ok()
        } else {
            reply.error(errno(&std::io::Error::last_os_error()))
        }
    }
}

/// A mounted fault file system; unmounted when dropped (after the processes using it are gone).
pub struct FaultMount {
    pub mountpoint: PathBuf,
    pub faults: Arc<Faults>,
    session: Option<fuser::BackgroundSession>,
}

impl FaultMount {
    /// Mounts a fault file system over `backing` at `mountpoint` (both existing directories).
    pub fn mount(backing: &Path, mountpoint: &Path) -> Result<FaultMount, String> {
        if !Path::new("/dev/fuse").exists() {
            return Err("no /dev/fuse".into());
        }
        let faults = Arc::new(Faults::default());
        let mut paths = HashMap::new();
        let mut inodes = HashMap::new();
        paths.insert(ROOT, PathBuf::new());
        inodes.insert(PathBuf::new(), ROOT);
        let fs = FaultFs {
            backing: backing.to_path_buf(),
            faults: faults.clone(),
            paths,
            inodes,
            next_ino: ROOT + 1,
            files: HashMap::new(),
            next_fh: 1,
        };
        let options = [
            MountOption::FSName("faultfs".into()),
            MountOption::RW,
            MountOption::AllowOther,
            MountOption::DefaultPermissions,
        ];
        let session = fuser::spawn_mount2(fs, mountpoint, &options)
            .map_err(|e| format!("FUSE mount at {}: {e}", mountpoint.display()))?;
        Ok(FaultMount {
            mountpoint: mountpoint.to_path_buf(),
            faults,
            session: Some(session),
        })
    }

    /// Fails `switch` (reads, writes or fsyncs) of files whose path contains `path_contains`.
    pub fn fail(&self, switch: &AtomicBool, path_contains: &str) {
        if let Ok(mut p) = self.faults.path_contains.lock() {
            *p = path_contains.to_owned();
        }
        switch.store(true, Ordering::SeqCst);
    }

    pub fn heal(&self) {
        for s in [&self.faults.reads, &self.faults.writes, &self.faults.fsyncs] {
            s.store(false, Ordering::SeqCst);
        }
    }
}

impl Drop for FaultMount {
    fn drop(&mut self) {
        if let Some(session) = self.session.take() {
            drop(session);
        }
    }
}
