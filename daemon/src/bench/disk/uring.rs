//! io_uring (Linux 5.6+, where IORING_OP_READ and IORING_OP_WRITE exist):
//! one ring per job thread, one entry per slot.

use std::io;
use std::os::fd::RawFd;

use io_uring::{IoUring, Probe, opcode, types};

pub struct UringQueue {
    ring: IoUring,
    fd: RawFd,
    /// Pushed and not yet reaped: an entry in the submission ring goes to
    /// the kernel at the next enter, whatever happens in between.
    in_flight: usize,
}

impl UringQueue {
    /// A ring of `depth` entries, or an error when this kernel has no
    /// io_uring, has it turned off (`kernel.io_uring_disabled`), or lacks
    /// the plain read and write operations (5.1 to 5.5).
    pub fn new(fd: RawFd, depth: usize) -> io::Result<Self> {
        let ring = IoUring::new(depth as u32)?;
        let mut probe = Probe::new();
        ring.submitter().register_probe(&mut probe)?;
        if !(probe.is_supported(opcode::Read::CODE) && probe.is_supported(opcode::Write::CODE)) {
            return Err(io::Error::from_raw_os_error(libc::ENOSYS));
        }
        Ok(UringQueue {
            ring,
            fd,
            in_flight: 0,
        })
    }
}

impl super::engine::Queue for UringQueue {
    unsafe fn push(&mut self, slot: usize, write: bool, buf: *mut u8, len: u64, offset: u64) {
        let fd = types::Fd(self.fd);
        // Block sizes are checked to fit in u32 before a job starts.
        let len = len as u32;
        let entry = if write {
            opcode::Write::new(fd, buf, len).offset(offset).build()
        } else {
            opcode::Read::new(fd, buf, len).offset(offset).build()
        }
        .user_data(slot as u64);
        // SAFETY: the caller keeps the buffer valid until completion. The
        // ring has a place for every slot, so the push cannot fail.
        if unsafe { self.ring.submission().push(&entry) }.is_ok() {
            self.in_flight += 1;
        }
    }

    fn submit(&mut self) -> io::Result<()> {
        // reap submits and waits in one system call.
        Ok(())
    }

    fn reap(&mut self, done: &mut Vec<(usize, i64)>) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => break,
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) => return Err(e),
            }
        }
        let before = done.len();
        done.extend(
            self.ring
                .completion()
                .map(|c| (c.user_data() as usize, i64::from(c.result()))),
        );
        self.in_flight -= done.len() - before;
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }
}
