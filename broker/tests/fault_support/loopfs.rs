//! A small ext4 file system on a loop device, mounted in a temp dir, for disk-full tests (O_DIRECT does
//! not work on tmpfs). Needs root, `mkfs.ext4` and loop devices; `create` says why when they are absent.
//! Unmounted (and its image deleted) on drop, also when a test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

pub struct LoopFs {
    pub mount: PathBuf,
    image: PathBuf,
    mounted: bool,
    _dir: tempfile::TempDir,
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{cmd:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl LoopFs {
    /// Makes and mounts an ext4 file system of `mib` MiB (no reserved blocks, 4 KiB blocks).
    pub fn create(mib: u64) -> Result<LoopFs, String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root: cannot mount a loop device".into());
        }
        if !Path::new("/dev/loop-control").exists() {
            return Err("no /dev/loop-control: loop devices unavailable".into());
        }
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let image = dir.path().join("disk.img");
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount).map_err(|e| e.to_string())?;
        let file = std::fs::File::create(&image).map_err(|e| e.to_string())?;
        file.set_len(mib << 20).map_err(|e| e.to_string())?;
        drop(file);
        let mut fs = LoopFs {
            mount,
            image,
            mounted: false,
            _dir: dir,
        };
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0", "-b", "4096"])
            .arg(&fs.image))?;
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&fs.image)
            .arg(&fs.mount))?;
        fs.mounted = true;
        Ok(fs)
    }

    /// Bytes an unprivileged writer could still use.
    pub fn free_bytes(&self) -> u64 {
        let Ok(c) = std::ffi::CString::new(self.mount.as_os_str().as_encoded_bytes()) else {
            return 0;
        };
        // SAFETY: statvfs is a plain C struct of integers, for which all-zero bytes are valid.
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: statvfs fills the struct we own; the path is a valid, NUL-terminated C string.
        if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
            return 0;
        }
        (st.f_bavail as u64).saturating_mul(st.f_frsize as u64)
    }

    /// Fills the file system with `name` (written until ENOSPC) and returns its size.
    pub fn fill(&self, name: &str) -> u64 {
        use std::io::Write;
        let path = self.mount.join(name);
        let mut f = std::fs::File::create(&path).expect("create filler");
        let chunk = vec![0x5au8; 64 * 1024];
        let mut written = 0u64;
        loop {
            match f.write(&chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n as u64,
            }
        }
        // Small tail pieces so not even one block is left.
        while let Ok(n) = f.write(&chunk[..512]) {
            if n == 0 {
                break;
            }
            written += n as u64;
        }
        let _ = f.sync_all();
        written
    }

    pub fn remove(&self, name: &str) {
        std::fs::remove_file(self.mount.join(name)).expect("remove filler");
        // SAFETY: sync has no preconditions.
        unsafe { libc::sync() };
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        if self.mounted {
            // `mount -o loop` sets autoclear: the loop device goes with the unmount.
            if run(Command::new("umount").arg(&self.mount)).is_err() {
                let _ = run(Command::new("umount").arg("-l").arg(&self.mount));
            }
        }
        let _ = std::fs::remove_file(&self.image);
    }
}
