//! ABI 1.1 memory: fills (memset), rectangle copies (copy_2d_*), the
//! runtime's memory facts (runtime_memory_info) and the consumer's host
//! memory pinned in place (host_register / host_unregister).
use std::marker::PhantomData;
use std::ops::Deref;
use std::os::raw::c_void;
use std::ptr;

use crate::{byte_len, sys, Buffer, Error, HostBuffer, Plain, Result, Runtime};

mod sealed {
    pub trait Sealed {}
}

/// An element [`Buffer::fill`] can repeat: 1, 2 or 4 bytes (memset's
/// element sizes). Sealed: implemented for `u8 i8 u16 i16 u32 i32 f32`.
pub trait Fill: Plain + sealed::Sealed {
    /// The pattern and its size in bytes, as memset takes them.
    fn pattern(self) -> (u32, u32);
}

macro_rules! fill {
    ($($t:ty => $u:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl Fill for $t {
            fn pattern(self) -> (u32, u32) {
                (<$u>::from_ne_bytes(self.to_ne_bytes()) as u32, std::mem::size_of::<$t>() as u32)
            }
        }
    )*};
}
fill!(u8 => u8, i8 => u8, u16 => u16, i16 => u16, u32 => u32, i32 => u32, f32 => u32);

/// A rectangle of a 2D copy (`t4a_copy_2d`): `rows` rows of `width` bytes;
/// row r starts at byte `offset + r * pitch` of its side (the destination's
/// `dst_*`, the source's `src_*`). A pitch is at least `width` when `rows`
/// > 1, at most the device's `max_pitch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rect {
    /// Bytes from the destination's start to its first row.
    pub dst_offset: u64,
    /// Bytes from one destination row to the next.
    pub dst_pitch: u64,
    /// Bytes from the source's start to its first row.
    pub src_offset: u64,
    /// Bytes from one source row to the next.
    pub src_pitch: u64,
    /// Bytes per row.
    pub width: u64,
    /// Rows.
    pub rows: u64,
}

impl Rect {
    /// `rows` packed rows of `width` bytes on both sides (pitches = width).
    pub fn new(width: u64, rows: u64) -> Rect {
        Rect {
            dst_pitch: width,
            src_pitch: width,
            width,
            rows,
            ..Rect::default()
        }
    }

    /// The same with the destination's pitch.
    pub fn dst_pitch(self, pitch: u64) -> Rect {
        Rect {
            dst_pitch: pitch,
            ..self
        }
    }

    /// The same with the source's pitch.
    pub fn src_pitch(self, pitch: u64) -> Rect {
        Rect {
            src_pitch: pitch,
            ..self
        }
    }

    fn to_sys(self) -> sys::t4a_copy_2d {
        sys::t4a_copy_2d {
            dst_offset: self.dst_offset,
            dst_pitch: self.dst_pitch,
            src_offset: self.src_offset,
            src_pitch: self.src_pitch,
            width: self.width,
            rows: self.rows,
            ..sys::t4a_copy_2d::sized()
        }
    }

    /// Checks that the rows on the host side (`offset`, `pitch`) lie in
    /// `len` bytes: the slot reads or writes host memory wherever the
    /// rectangle says, so a slice too short is refused here (T4A_ERANGE)
    /// before the backend sees it. A pitch below the width is left to the
    /// backend (T4A_EINVAL, nothing touched), as are empty rectangles.
    fn check_host(
        &self,
        offset: u64,
        pitch: u64,
        len: usize,
        call: &'static str,
    ) -> Result<()> {
        if self.rows == 0 || self.width == 0 || (self.rows > 1 && pitch < self.width) {
            return Ok(());
        }
        let end = (self.rows - 1)
            .checked_mul(pitch)
            .and_then(|x| x.checked_add(offset))
            .and_then(|x| x.checked_add(self.width));
        match end {
            Some(end) if end <= len as u64 => Ok(()),
            _ => Err(Error::new(
                sys::T4A_ERANGE,
                call,
                format!(
                    "the rectangle's host rows ({} of {} bytes, pitch {pitch}, from byte \
                     {offset}) run past the host slice's {len} bytes; pass a larger slice",
                    self.rows, self.width
                ),
            )),
        }
    }
}

impl<'r> Buffer<'r> {
    /// Enqueues a fill of `count` elements of `element_size` bytes (1, 2 or
    /// 4) from byte `offset` with `pattern` (memset).
    pub fn memset(&self, offset: u64, pattern: u32, element_size: u32, count: u64) -> Result<()> {
        call!(
            self.rt.backend,
            memset(
                self.rt.handle,
                self.handle,
                offset,
                pattern,
                element_size,
                count
            )
        )
    }

    /// Enqueues a fill of the whole buffer with `value` repeated (its size
    /// must divide the buffer's: else `T4A_EINVAL`, nothing enqueued).
    pub fn fill<T: Fill>(&self, value: T) -> Result<()> {
        let (pattern, size) = value.pattern();
        if self.len % size as u64 != 0 {
            return Err(Error::new(
                sys::T4A_EINVAL,
                "memset",
                format!(
                    "the buffer's {} bytes are no whole number of {size}-byte elements; \
                     use memset with a count",
                    self.len
                ),
            ));
        }
        self.memset(0, pattern, size, self.len / size as u64)
    }

    /// Copies the rectangle `r` from host `src` (source side: `src_offset`,
    /// `src_pitch`, in bytes of the slice) to this buffer (copy_2d_h2d,
    /// through the staging); returns once `src` may be reused.
    pub fn write_2d<T: Plain>(&self, src: &[T], r: &Rect) -> Result<()> {
        r.check_host(r.src_offset, r.src_pitch, byte_len(src) as usize, "copy_2d_h2d")?;
        let g = r.to_sys();
        call!(
            self.rt.backend,
            copy_2d_h2d(
                self.rt.handle,
                self.handle,
                src.as_ptr() as *const c_void,
                &g
            )
        )
    }

    /// Copies the rectangle `r` from this buffer to host `dst` (destination
    /// side: `dst_offset`, `dst_pitch`) (copy_2d_d2h); returns once `dst`
    /// holds the data. Bytes of `dst` between the rows are left as they were.
    pub fn read_2d<T: Plain>(&self, dst: &mut [T], r: &Rect) -> Result<()> {
        r.check_host(r.dst_offset, r.dst_pitch, byte_len(dst) as usize, "copy_2d_d2h")?;
        let g = r.to_sys();
        call!(
            self.rt.backend,
            copy_2d_d2h(
                self.rt.handle,
                dst.as_mut_ptr() as *mut c_void,
                self.handle,
                &g
            )
        )
    }

    /// Enqueues the rectangle `r` from `src` to this buffer, within one
    /// runtime (copy_2d_d2d; another runtime's buffer is `T4A_EHANDLE`).
    pub fn copy_2d_from(&self, src: &Buffer<'_>, r: &Rect) -> Result<()> {
        let g = r.to_sys();
        call!(
            self.rt.backend,
            copy_2d_d2d(self.rt.handle, self.handle, src.handle, &g)
        )
    }

    /// Enqueues the asynchronous rectangle copy from pinned `src`
    /// (copy_2d_h2d_pinned).
    ///
    /// # Safety
    /// As [`Buffer::copy_from_pinned`]: do not write `src` until a witness
    /// covering the copy is ready.
    pub unsafe fn copy_2d_from_pinned(&self, src: &HostBuffer<'_>, r: &Rect) -> Result<()> {
        let g = r.to_sys();
        call!(
            self.rt.backend,
            copy_2d_h2d_pinned(self.rt.handle, self.handle, src.handle, &g)
        )
    }
}

impl HostBuffer<'_> {
    /// Enqueues the asynchronous rectangle copy from `src` into this host
    /// buffer (copy_2d_d2h_pinned).
    ///
    /// # Safety
    /// As [`HostBuffer::copy_from_device`]: do not read or write this
    /// memory until a witness covering the copy is ready.
    pub unsafe fn copy_2d_from_device(&self, src: &Buffer<'_>, r: &Rect) -> Result<()> {
        let g = r.to_sys();
        call!(
            self.rt.backend,
            copy_2d_d2h_pinned(self.rt.handle, self.handle, src.handle, &g)
        )
    }

    /// The size in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether this is the consumer's memory pinned by [`Runtime::register`]
    /// or [`Runtime::register_read_only`].
    pub fn is_registered(&self) -> bool {
        self.registered
    }
}

/// The consumer's memory pinned in place by [`Runtime::register`]: a
/// [`HostBuffer`] (it derefs to one, shared: every pinned copy takes it) that
/// borrows the slice
/// uniquely until it drops, so nothing else can read, write, move or free
/// the memory while the device may use it. Drop (or
/// [`Registered::unregister`]) unregisters and then waits for the
/// runtime's work enqueued so far ([`Runtime::drain`]), so the borrow ends
/// only once no copy can touch the memory any more.
///
/// ```compile_fail,E0499
/// # let backend = t4a_gpu::Backend::open(None)?;
/// # let rt = backend.runtime(0)?;
/// let mut data = vec![0u8; 4096];
/// let pinned = rt.register(&mut data)?;
/// data[0] = 1; // error: `data` is borrowed by the registration
/// drop(pinned);
/// # Ok::<(), t4a_gpu::Error>(())
/// ```
///
/// Nor can the host buffer be moved out of the registration (it would
/// outlive the borrow):
///
/// ```compile_fail,E0596
/// # let backend = t4a_gpu::Backend::open(None)?;
/// # let rt = backend.runtime(0)?;
/// let mut data = vec![0u8; 4096];
/// let mut pinned = rt.register(&mut data)?;
/// let mut other = rt.host_alloc(4096, false)?;
/// std::mem::swap(&mut *pinned, &mut other); // error: no DerefMut
/// # Ok::<(), t4a_gpu::Error>(())
/// ```
#[derive(Debug)]
pub struct Registered<'r, 's> {
    hb: HostBuffer<'r>,
    _mem: PhantomData<&'s mut [u8]>,
}

/// The consumer's memory pinned read-only by
/// [`Runtime::register_read_only`] (`T4A_HOST_REGISTER_READ_ONLY`): the
/// device only reads it (a copy into it is `T4A_EINVAL`), so it borrows the
/// slice shared. Released as [`Registered`].
///
/// ```compile_fail,E0502
/// # let backend = t4a_gpu::Backend::open(None)?;
/// # let rt = backend.runtime(0)?;
/// let mut data = vec![0u8; 4096];
/// let pinned = rt.register_read_only(&data)?;
/// data.push(1); // error: `data` is borrowed (it could move)
/// drop(pinned);
/// # Ok::<(), t4a_gpu::Error>(())
/// ```
#[derive(Debug)]
pub struct RegisteredReadOnly<'r, 's> {
    hb: HostBuffer<'r>,
    _mem: PhantomData<&'s [u8]>,
}

impl<'r> Deref for Registered<'r, '_> {
    type Target = HostBuffer<'r>;
    fn deref(&self) -> &HostBuffer<'r> {
        &self.hb
    }
}

impl<'r> Deref for RegisteredReadOnly<'r, '_> {
    type Target = HostBuffer<'r>;
    fn deref(&self) -> &HostBuffer<'r> {
        &self.hb
    }
}

impl Registered<'_, '_> {
    /// The memory, writable (the slice the registration borrows).
    ///
    /// There is deliberately no `DerefMut` to the [`HostBuffer`]: a
    /// `&mut HostBuffer` could be swapped out of the registration (and
    /// outlive the borrow of the slice).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.hb.as_mut_slice()
    }

    /// Unregisters and waits, with the status checked (Drop ignores it).
    pub fn unregister(mut self) -> Result<()> {
        self.hb.release()
    }
}

impl RegisteredReadOnly<'_, '_> {
    /// Unregisters and waits, with the status checked (Drop ignores it).
    pub fn unregister(mut self) -> Result<()> {
        self.hb.release()
    }
}

impl<'b> Runtime<'b> {
    /// The device's free and total memory and this runtime's pool, cache
    /// and staging (runtime_memory_info).
    pub fn memory_info(&self) -> Result<sys::t4a_memory_info> {
        let mut m = sys::t4a_memory_info::sized();
        call!(self.backend, runtime_memory_info(self.handle, &mut m))?;
        Ok(m)
    }

    fn register_raw(&self, p: *mut u8, len: usize, flags: u32) -> Result<HostBuffer<'_>> {
        let mut handle = sys::t4a_host_buffer::default();
        call!(
            self.backend,
            host_register(self.handle, p as *mut c_void, len as u64, flags, &mut handle)
        )?;
        Ok(HostBuffer {
            rt: self,
            handle,
            ptr: p,
            len,
            registered: true,
        })
    }

    /// Pins `mem` in place (host_register) as a host buffer every pinned
    /// copy takes, both ways. `mem` stays borrowed until the registration
    /// drops (see [`Registered`]).
    pub fn register<'s, T: Plain>(&self, mem: &'s mut [T]) -> Result<Registered<'_, 's>> {
        let len = byte_len(mem) as usize;
        Ok(Registered {
            hb: self.register_raw(mem.as_mut_ptr() as *mut u8, len, 0)?,
            _mem: PhantomData,
        })
    }

    /// Pins `mem` read-only (`T4A_HOST_REGISTER_READ_ONLY`): copies from it
    /// only. `mem` stays borrowed (shared) until the registration drops.
    pub fn register_read_only<'s, T: Plain>(
        &self,
        mem: &'s [T],
    ) -> Result<RegisteredReadOnly<'_, 's>> {
        let len = byte_len(mem) as usize;
        let p = if mem.is_empty() {
            ptr::null_mut()
        } else {
            mem.as_ptr() as *mut u8
        };
        Ok(RegisteredReadOnly {
            hb: self.register_raw(p, len, sys::T4A_HOST_REGISTER_READ_ONLY)?,
            _mem: PhantomData,
        })
    }
}
