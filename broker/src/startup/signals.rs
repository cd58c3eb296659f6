//! SIGTERM/SIGINT for a glommio process: the signals are blocked in every thread and read from a
//! non-blocking `signalfd`, which shard 0 polls.

/// A non-blocking signalfd for SIGTERM and SIGINT.
#[derive(Debug, Clone, Copy)]
pub struct SignalFd {
    fd: i32,
}

impl SignalFd {
    /// Blocks SIGTERM and SIGINT in the calling thread (threads started later inherit the mask) and
    /// opens a signalfd for them. Call before starting any other thread.
    pub fn install() -> std::io::Result<SignalFd> {
        // SAFETY: plain libc calls on a zeroed, locally owned sigset_t; the return codes are checked.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTERM);
            libc::sigaddset(&mut set, libc::SIGINT);
            let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
            if rc != 0 {
                return Err(std::io::Error::from_raw_os_error(rc));
            }
            let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if fd < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(SignalFd { fd })
        }
    }

    /// The number of a pending signal, if one arrived.
    pub fn poll(&self) -> Option<u32> {
        // SAFETY: reads at most size_of::<signalfd_siginfo>() bytes into a zeroed local struct.
        unsafe {
            let mut info: libc::signalfd_siginfo = std::mem::zeroed();
            let size = std::mem::size_of::<libc::signalfd_siginfo>();
            let n = libc::read(
                self.fd,
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size,
            );
            if n == size as isize {
                Some(info.ssi_signo)
            } else {
                None
            }
        }
    }
}
