//! Linux native AIO (what fio calls libaio) through its raw system calls:
//! io_setup, io_submit, io_getevents, io_destroy. Present on every kernel
//! these boards run (4.14 on), and with O_DIRECT truly asynchronous.

use std::io;
use std::os::fd::RawFd;

// The iocb below is the little-endian layout (aio_key before
// aio_rw_flags); every board nasd runs on is little-endian.
const _: () = assert!(cfg!(target_endian = "little"));

const IOCB_CMD_PREAD: u16 = 0;
const IOCB_CMD_PWRITE: u16 = 1;

/// `struct iocb` of <linux/aio_abi.h>: 64 bytes on every architecture.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct Iocb {
    pub aio_data: u64,
    aio_key: u32,
    aio_rw_flags: i32,
    aio_lio_opcode: u16,
    aio_reqprio: i16,
    aio_fildes: u32,
    aio_buf: u64,
    aio_nbytes: u64,
    aio_offset: i64,
    aio_reserved2: u64,
    aio_flags: u32,
    aio_resfd: u32,
}

const _: () = assert!(std::mem::size_of::<Iocb>() == 64);

/// `struct io_event`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct IoEvent {
    pub data: u64,
    pub obj: u64,
    pub res: i64,
    pub res2: i64,
}

impl Iocb {
    /// A read or write of `len` bytes at `offset`, into or from `buf`,
    /// tagged with `data` (the slot it belongs to).
    pub fn prepare(fd: RawFd, write: bool, buf: *mut u8, len: u64, offset: u64, data: u64) -> Self {
        Iocb {
            aio_data: data,
            aio_lio_opcode: if write {
                IOCB_CMD_PWRITE
            } else {
                IOCB_CMD_PREAD
            },
            aio_fildes: fd as u32,
            aio_buf: buf as usize as u64,
            aio_nbytes: len,
            aio_offset: offset as i64,
            ..Iocb::default()
        }
    }
}

/// An AIO context of `depth` requests; destroyed on drop.
pub struct Context {
    id: libc::c_ulong,
}

fn check(rc: libc::c_long) -> io::Result<usize> {
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

impl Context {
    pub fn new(depth: u32) -> io::Result<Self> {
        let mut id: libc::c_ulong = 0;
        // SAFETY: io_setup writes the new context's id into `id`.
        check(unsafe { libc::syscall(libc::SYS_io_setup, depth as libc::c_long, &mut id) })?;
        Ok(Context { id })
    }

    /// Submits requests; the buffers they point at must stay valid until
    /// their events are reaped. Returns how many the kernel took.
    pub fn submit(&self, iocbs: &mut [*mut Iocb]) -> io::Result<usize> {
        // SAFETY: `iocbs` points at live Iocb values for the duration of
        // the call; the caller keeps their buffers until completion.
        check(unsafe {
            libc::syscall(
                libc::SYS_io_submit,
                self.id,
                iocbs.len() as libc::c_long,
                iocbs.as_mut_ptr(),
            )
        })
    }

    /// Waits for at least `min` completions (at most one second).
    pub fn reap(&self, min: usize, events: &mut [IoEvent]) -> io::Result<usize> {
        let mut timeout = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        // SAFETY: the kernel writes at most events.len() io_event values.
        check(unsafe {
            libc::syscall(
                libc::SYS_io_getevents,
                self.id,
                min as libc::c_long,
                events.len() as libc::c_long,
                events.as_mut_ptr(),
                &mut timeout,
            )
        })
    }
}

/// The engine's request queue over an AIO context: one iocb per slot,
/// at fixed addresses while requests are in flight.
pub struct AioQueue {
    ctx: Context,
    fd: RawFd,
    iocbs: Vec<Iocb>,
    batch: Vec<usize>,
    events: Vec<IoEvent>,
    in_flight: usize,
}

impl AioQueue {
    pub fn new(fd: RawFd, depth: usize) -> io::Result<Self> {
        Ok(AioQueue {
            ctx: Context::new(depth as u32)?,
            fd,
            iocbs: vec![Iocb::default(); depth],
            batch: Vec::with_capacity(depth),
            events: vec![IoEvent::default(); depth],
            in_flight: 0,
        })
    }
}

impl super::engine::Queue for AioQueue {
    unsafe fn push(&mut self, slot: usize, write: bool, buf: *mut u8, len: u64, offset: u64) {
        self.iocbs[slot] = Iocb::prepare(self.fd, write, buf, len, offset, slot as u64);
        self.batch.push(slot);
    }

    fn submit(&mut self) -> io::Result<()> {
        let base = self.iocbs.as_mut_ptr();
        // SAFETY: every slot index is below iocbs.len().
        let mut pointers: Vec<*mut Iocb> = self
            .batch
            .drain(..)
            .map(|slot| unsafe { base.add(slot) })
            .collect();
        let mut submitted = 0;
        while submitted < pointers.len() {
            // What the kernel did not take is dropped: it is not in flight.
            let taken = self.ctx.submit(&mut pointers[submitted..])?;
            submitted += taken;
            self.in_flight += taken;
        }
        Ok(())
    }

    fn reap(&mut self, done: &mut Vec<(usize, i64)>) -> io::Result<()> {
        let n = loop {
            match self.ctx.reap(1, &mut self.events) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.in_flight -= n;
        done.extend(self.events[..n].iter().map(|e| (e.data as usize, e.res)));
        Ok(())
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context was made by io_setup and is destroyed once.
        unsafe { libc::syscall(libc::SYS_io_destroy, self.id) };
    }
}
