//! ABI 1.1 interop: memory the runtime did not allocate
//! (buffer_wrap_external), ordering against the consumer's streams and
//! events (stream_wait_witness, runtime_wait_stream, runtime_wait_event),
//! and DLPack (dlpack_export, dlpack_import).
use std::marker::PhantomData;
use std::ops::Deref;
use std::os::raw::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};

use crate::{sys, Buffer, Error, Result, Runtime, Witness};

/// A callback the backend runs once, on whichever thread reaches the point
/// where it is due (see the header: release of external memory, on_delete
/// of a DLPack export): so `Send`, and `'static` since it may run after
/// every borrow ended.
pub type Callback = Box<dyn FnOnce() + Send + 'static>;

/// `user` of a callback: the boxed [`Callback`], called once by
/// [`run_callback`].
fn callback_user(f: Callback) -> *mut c_void {
    Box::into_raw(Box::new(f)) as *mut c_void
}

/// The C side of a [`Callback`]: takes the box back and calls it. A panic
/// must not unwind into C: it aborts the process.
unsafe extern "C" fn run_callback(user: *mut c_void) {
    // SAFETY: `user` came from callback_user and the backend calls this
    // exactly once (the header's contract), so the box is taken once.
    let f = unsafe { Box::from_raw(user as *mut Callback) };
    if catch_unwind(AssertUnwindSafe(f)).is_err() {
        std::process::abort();
    }
}

/// Frees a callback the backend never took (the call failed: nothing is
/// called then, the header says).
fn drop_callback(user: *mut c_void) {
    if !user.is_null() {
        // SAFETY: from callback_user, not handed over.
        drop(unsafe { Box::from_raw(user as *mut Callback) });
    }
}

/// Memory the runtime did not allocate, for [`Runtime::wrap_external`].
pub struct ExternalMemory {
    /// The first byte: a device address of the runtime's device, or with
    /// `host` a host address of page-locked memory.
    pub address: u64,
    /// Bytes (0 is valid).
    pub bytes: u64,
    /// Page-locked host memory the device can address (`T4A_EXTERNAL_HOST`).
    pub host: bool,
    /// Run once when the runtime lets go of the memory: after the buffer
    /// was freed and its last use completed, at a later natural point of
    /// the runtime (seal, a wait, a free, runtime_destroy), on that call's
    /// thread. Never after a device fault; dropped uncalled on failure.
    pub release: Option<Callback>,
}

impl std::fmt::Debug for ExternalMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalMemory")
            .field("address", &format_args!("{:#x}", self.address))
            .field("bytes", &self.bytes)
            .field("host", &self.host)
            .field("release", &self.release.is_some())
            .finish()
    }
}

/// A consumer's CUstream for the interop slots: one of another runtime
/// ([`Runtime::stream`]), the legacy default stream or the per-thread one,
/// or one made by the consumer ([`Stream::from_raw`]). Borrows what it came
/// from, so it cannot outlive a runtime's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stream<'a> {
    raw: *mut c_void,
    _from: PhantomData<&'a ()>,
}

// SAFETY: a CUstream is a driver handle usable from any thread.
unsafe impl Send for Stream<'_> {}
// SAFETY: as above.
unsafe impl Sync for Stream<'_> {}

impl Stream<'static> {
    /// The legacy default stream (`T4A_STREAM_LEGACY`; NULL means it too).
    pub const LEGACY: Stream<'static> = Stream {
        raw: sys::T4A_STREAM_LEGACY as usize as *mut c_void,
        _from: PhantomData,
    };
    /// The calling thread's default stream (`T4A_STREAM_PER_THREAD`).
    pub const PER_THREAD: Stream<'static> = Stream {
        raw: sys::T4A_STREAM_PER_THREAD as usize as *mut c_void,
        _from: PhantomData,
    };
}

impl<'a> Stream<'a> {
    /// A consumer's CUstream.
    ///
    /// # Safety
    /// `raw` is NULL, one of the `T4A_STREAM_*` values, or a live CUstream
    /// of the runtime's device's primary context, for as long as `'a`.
    pub unsafe fn from_raw(raw: *mut c_void) -> Stream<'a> {
        Stream {
            raw,
            _from: PhantomData,
        }
    }

    /// The CUstream.
    pub fn as_raw(&self) -> *mut c_void {
        self.raw
    }
}

/// A consumer's CUevent, for [`Runtime::wait_event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event<'a> {
    raw: *mut c_void,
    _from: PhantomData<&'a ()>,
}

// SAFETY: a CUevent is a driver handle usable from any thread.
unsafe impl Send for Event<'_> {}
// SAFETY: as above.
unsafe impl Sync for Event<'_> {}

impl<'a> Event<'a> {
    /// A consumer's CUevent.
    ///
    /// # Safety
    /// `raw` is a live CUevent (of any context) for as long as `'a`.
    pub unsafe fn from_raw(raw: *mut c_void) -> Event<'a> {
        Event {
            raw,
            _from: PhantomData,
        }
    }

    /// The CUevent.
    pub fn as_raw(&self) -> *mut c_void {
        self.raw
    }
}

impl<'b> Runtime<'b> {
    /// This runtime's own CUstream (raw_runtime), as a consumer stream of
    /// the interop slots of another runtime on the same device. The host
    /// backend has none: `T4A_EUNSUPPORTED`.
    pub fn stream(&self) -> Result<Stream<'_>> {
        let raw = self.raw()?;
        Ok(Stream {
            raw: raw.stream,
            _from: PhantomData,
        })
    }

    /// Wraps memory the runtime did not allocate as a buffer of this
    /// runtime (buffer_wrap_external): every copy, memset, launch and
    /// DLPack export takes it; freeing it never frees the memory, and
    /// `mem.release` runs once the runtime let go of it.
    ///
    /// # Safety
    /// `[address, address + bytes)` is memory of this runtime's device (or,
    /// with `host`, page-locked host memory) that stays allocated, and that
    /// nothing else frees or reuses, until `release` ran (or, without one,
    /// until the buffer was freed and the runtime's work on it completed).
    /// The device may read and write it through the buffer behind Rust's
    /// back.
    pub unsafe fn wrap_external(&self, mem: ExternalMemory) -> Result<Buffer<'_>> {
        let user = mem.release.map_or(ptr::null_mut(), callback_user);
        let m = sys::t4a_external_memory {
            flags: if mem.host { sys::T4A_EXTERNAL_HOST } else { 0 },
            address: mem.address,
            bytes: mem.bytes,
            device_ordinal: if mem.host { -1 } else { self.device },
            release: if user.is_null() {
                None
            } else {
                Some(run_callback)
            },
            user,
            ..sys::t4a_external_memory::sized()
        };
        let mut handle = sys::t4a_buffer::default();
        match call!(
            self.backend,
            buffer_wrap_external(self.handle, &m, &mut handle)
        ) {
            Ok(()) => Ok(Buffer {
                rt: self,
                handle,
                len: mem.bytes,
            }),
            Err(e) => {
                drop_callback(user);
                Err(e)
            }
        }
    }

    /// Work the consumer enqueues on `stream` after this call runs after
    /// `w`'s work (stream_wait_witness: GPU-side; this runtime names the
    /// context `stream` lives in). `w` may come from any runtime of the
    /// backend.
    pub fn order_stream_after(&self, stream: Stream<'_>, w: &Witness<'_>) -> Result<()> {
        call!(
            self.backend,
            stream_wait_witness(self.handle, stream.raw, w.handle)
        )
    }

    /// Work this runtime enqueues after this call runs after all work the
    /// consumer enqueued on `stream` so far (runtime_wait_stream,
    /// GPU-side). During a capture: `T4A_EBUSY`.
    pub fn wait_stream(&self, stream: Stream<'_>) -> Result<()> {
        call!(self.backend, runtime_wait_stream(self.handle, stream.raw))
    }

    /// Work this runtime enqueues after this call runs after `event`'s
    /// most recent record (runtime_wait_event, GPU-side).
    pub fn wait_event(&self, event: Event<'_>) -> Result<()> {
        call!(self.backend, runtime_wait_event(self.handle, event.raw))
    }
}

// ---------------------------------------------------------------------------
// DLPack.
// ---------------------------------------------------------------------------

/// A DLPack element type (DLDataType): `lanes` elements of `bits` bits of
/// kind `code` (`sys::T4A_DL_INT`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DataType {
    /// `sys::T4A_DL_INT`, `T4A_DL_UINT`, `T4A_DL_FLOAT`, ...
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for scalars).
    pub lanes: u16,
}

macro_rules! dtypes {
    ($($name:ident = $code:ident, $bits:expr, $what:expr;)*) => {
        impl DataType {
            $(
                #[doc = $what]
                pub const $name: DataType = DataType {
                    code: sys::$code as u8,
                    bits: $bits,
                    lanes: 1,
                };
            )*
        }
    };
}
dtypes! {
    BOOL = T4A_DL_BOOL, 8, "bool (one byte)";
    I8 = T4A_DL_INT, 8, "int8";
    U8 = T4A_DL_UINT, 8, "uint8";
    I16 = T4A_DL_INT, 16, "int16";
    U16 = T4A_DL_UINT, 16, "uint16";
    I32 = T4A_DL_INT, 32, "int32";
    U32 = T4A_DL_UINT, 32, "uint32";
    I64 = T4A_DL_INT, 64, "int64";
    U64 = T4A_DL_UINT, 64, "uint64";
    F16 = T4A_DL_FLOAT, 16, "float16";
    BF16 = T4A_DL_BFLOAT, 16, "bfloat16";
    F32 = T4A_DL_FLOAT, 32, "float32";
    F64 = T4A_DL_FLOAT, 64, "float64";
}

impl DataType {
    /// Bytes per element (bits * lanes / 8).
    pub fn size(&self) -> u64 {
        self.bits as u64 * self.lanes as u64 / 8
    }

    fn to_sys(self) -> sys::t4a_dl_data_type {
        sys::t4a_dl_data_type {
            code: self.code,
            bits: self.bits,
            lanes: self.lanes,
        }
    }
}

/// A buffer range seen as a tensor, for [`Buffer::dlpack`]: element (i0,
/// i1, ...) is at byte `offset + (i0 * strides[0] + ...) * dtype.size()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TensorView {
    /// The element type.
    pub dtype: DataType,
    /// Extents (at most `T4A_DLPACK_MAX_NDIM`), each >= 0.
    pub shape: Vec<i64>,
    /// Strides in elements (negative allowed); None: compact row-major.
    pub strides: Option<Vec<i64>>,
    /// Bytes from the buffer's start to element 0.
    pub offset: u64,
    /// A DLManagedTensorVersioned rather than the legacy DLManagedTensor.
    pub versioned: bool,
    /// Mark it read-only (`T4A_DL_FLAG_READ_ONLY`; versioned only).
    pub read_only: bool,
    /// `data` the buffer's start and `byte_offset` the offset (the spec's
    /// form) rather than `data` element 0's address (PyTorch's and CuPy's).
    pub byte_offset: bool,
}

impl TensorView {
    /// A compact row-major tensor of `shape` from the buffer's start, the
    /// legacy form.
    pub fn new(dtype: DataType, shape: &[i64]) -> TensorView {
        TensorView {
            dtype,
            shape: shape.to_vec(),
            strides: None,
            offset: 0,
            versioned: false,
            read_only: false,
            byte_offset: false,
        }
    }
}

/// A DLPack managed tensor exported from a buffer ([`Buffer::dlpack`]). It
/// borrows the buffer, so the buffer (and its runtime) outlive it; Drop
/// calls its deleter unless it was handed to a consumer
/// ([`DlTensor::into_raw`]) or imported ([`Runtime::dlpack_import`]).
///
/// ```compile_fail,E0505
/// # use t4a_gpu::{DataType, TensorView};
/// # let backend = t4a_gpu::Backend::open(None)?;
/// # let rt = backend.runtime(0)?;
/// let buf = rt.alloc(64)?;
/// let tensor = buf.dlpack(&TensorView::new(DataType::U8, &[64]))?;
/// drop(buf); // error: `buf` is borrowed by the tensor
/// drop(tensor);
/// # Ok::<(), t4a_gpu::Error>(())
/// ```
#[derive(Debug)]
pub struct DlTensor<'a> {
    managed: NonNull<c_void>,
    versioned: bool,
    _buf: PhantomData<&'a Buffer<'a>>,
}

// SAFETY: the tensor's fields are plain memory the export allocated, and
// its deleter touches no runtime and may run on any thread (the header).
unsafe impl Send for DlTensor<'_> {}
// SAFETY: shared access only reads those fields.
unsafe impl Sync for DlTensor<'_> {}

impl<'a> DlTensor<'a> {
    /// The DLTensor.
    pub fn tensor(&self) -> &sys::t4a_dl_tensor {
        // SAFETY: `managed` is the export's live managed tensor of the form
        // `versioned` says, until the deleter runs (in Drop or by whoever
        // took it with into_raw).
        unsafe {
            if self.versioned {
                &(*(self.managed.as_ptr() as *const sys::t4a_dl_managed_tensor_versioned))
                    .dl_tensor
            } else {
                &(*(self.managed.as_ptr() as *const sys::t4a_dl_managed_tensor)).dl_tensor
            }
        }
    }

    /// Whether this is a DLManagedTensorVersioned.
    pub fn is_versioned(&self) -> bool {
        self.versioned
    }

    /// The DLPack version and flags (`T4A_DL_FLAG_*`) of a versioned
    /// tensor; None for the legacy form.
    pub fn version_and_flags(&self) -> Option<((u32, u32), u64)> {
        if !self.versioned {
            return None;
        }
        // SAFETY: as in tensor().
        let m = unsafe { &*(self.managed.as_ptr() as *const sys::t4a_dl_managed_tensor_versioned) };
        Some(((m.version.major, m.version.minor), m.flags))
    }

    /// The extents.
    pub fn shape(&self) -> &[i64] {
        let t = self.tensor();
        if t.ndim <= 0 || t.shape.is_null() {
            return &[];
        }
        // SAFETY: ndim extents, owned by the export until its deleter.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }
    }

    /// The strides in elements (always filled in by the export).
    pub fn strides(&self) -> &[i64] {
        let t = self.tensor();
        if t.ndim <= 0 || t.strides.is_null() {
            return &[];
        }
        // SAFETY: as in shape().
        unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) }
    }

    /// The element type.
    pub fn dtype(&self) -> DataType {
        let d = self.tensor().dtype;
        DataType {
            code: d.code,
            bits: d.bits,
            lanes: d.lanes,
        }
    }

    /// (device_type, device_id): (`T4A_DL_CUDA`, ordinal) for device memory.
    pub fn device(&self) -> (i32, i32) {
        let d = self.tensor().device;
        (d.device_type, d.device_id)
    }

    /// The data address (element 0's, or the buffer's start with
    /// [`TensorView::byte_offset`]).
    pub fn data(&self) -> u64 {
        self.tensor().data as u64
    }

    /// Bytes from `data` to element 0.
    pub fn byte_offset(&self) -> u64 {
        self.tensor().byte_offset
    }

    /// Hands the managed tensor to a DLPack consumer (a
    /// `t4a_dl_managed_tensor *`, or `t4a_dl_managed_tensor_versioned *`
    /// when versioned), which must call its deleter once. Nothing then
    /// ties it to the buffer: the consumer must be done with the memory
    /// (its GPU work included) before the buffer is freed.
    pub fn into_raw(self) -> *mut c_void {
        let p = self.managed.as_ptr();
        std::mem::forget(self);
        p
    }
}

impl Drop for DlTensor<'_> {
    fn drop(&mut self) {
        // SAFETY: as in tensor(); the deleter is called once, here.
        unsafe {
            if self.versioned {
                let m = self.managed.as_ptr() as *mut sys::t4a_dl_managed_tensor_versioned;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            } else {
                let m = self.managed.as_ptr() as *mut sys::t4a_dl_managed_tensor;
                if let Some(d) = (*m).deleter {
                    d(m);
                }
            }
        }
    }
}

impl<'r> Buffer<'r> {
    /// Exports a range of this buffer as a DLPack tensor (dlpack_export):
    /// no copy, nothing enqueued (order a consumer's stream after the
    /// runtime's work with [`Runtime::order_stream_after`]).
    pub fn dlpack(&self, view: &TensorView) -> Result<DlTensor<'_>> {
        self.dlpack_with(view, None)
    }

    /// [`Buffer::dlpack`] with `on_delete`, run once by the tensor's
    /// deleter after the export's own memory was freed (on any thread).
    pub fn dlpack_with(
        &self,
        view: &TensorView,
        on_delete: Option<Callback>,
    ) -> Result<DlTensor<'_>> {
        if let Some(s) = &view.strides {
            if s.len() != view.shape.len() {
                return Err(Error::new(
                    sys::T4A_EINVAL,
                    "dlpack_export",
                    format!(
                        "{} strides for {} extents; give one stride per dimension",
                        s.len(),
                        view.shape.len()
                    ),
                ));
            }
        }
        let user = on_delete.map_or(ptr::null_mut(), callback_user);
        let flags = (if view.versioned {
            sys::T4A_DLPACK_VERSIONED
        } else {
            0
        }) | (if view.read_only {
            sys::T4A_DLPACK_READ_ONLY
        } else {
            0
        }) | (if view.byte_offset {
            sys::T4A_DLPACK_BYTE_OFFSET
        } else {
            0
        });
        let req = sys::t4a_dlpack_export {
            flags,
            offset: view.offset,
            dtype: view.dtype.to_sys(),
            ndim: view.shape.len().min(i32::MAX as usize) as i32,
            shape: if view.shape.is_empty() {
                ptr::null()
            } else {
                view.shape.as_ptr()
            },
            strides: view.strides.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
            on_delete: if user.is_null() {
                None
            } else {
                Some(run_callback)
            },
            user,
            ..sys::t4a_dlpack_export::sized()
        };
        let mut out = ptr::null_mut();
        match call!(
            self.rt.backend,
            dlpack_export(self.rt.handle, self.handle, &req, &mut out)
        ) {
            Ok(()) => match NonNull::new(out) {
                Some(managed) => Ok(DlTensor {
                    managed,
                    versioned: view.versioned,
                    _buf: PhantomData,
                }),
                None => Err(Error::new(
                    sys::T4A_EINVAL,
                    "dlpack_export",
                    "the backend returned no tensor; report this backend bug".into(),
                )),
            },
            Err(e) => {
                drop_callback(user);
                Err(e)
            }
        }
    }
}

/// A DLPack tensor imported as a buffer of a runtime
/// ([`Runtime::dlpack_import`]): derefs to the [`Buffer`], and borrows
/// what the tensor views (`'t`) until it drops. Drop frees the buffer, then
/// waits for the runtime's work enqueued so far ([`Runtime::drain`]), so
/// the borrow ends only once no work can touch the memory.
///
/// ```compile_fail,E0505
/// # use t4a_gpu::{DataType, TensorView};
/// # let backend = t4a_gpu::Backend::open(None)?;
/// # let (producer, consumer) = (backend.runtime(0)?, backend.runtime(0)?);
/// let buf = producer.alloc(64)?;
/// let imported = consumer.dlpack_import(buf.dlpack(&TensorView::new(DataType::U8, &[64]))?, false)?;
/// drop(buf); // error: `buf` is borrowed by the imported buffer
/// drop(imported);
/// # Ok::<(), t4a_gpu::Error>(())
/// ```
#[derive(Debug)]
pub struct Imported<'r, 't> {
    buf: Buffer<'r>,
    offset: u64,
    _src: PhantomData<&'t ()>,
}

impl<'r> Imported<'r, '_> {
    /// Bytes from the buffer's start to element 0 (non-zero only with
    /// negative strides).
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Frees and waits, with the status checked (Drop ignores it).
    pub fn free(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if self.buf.handle.bits == 0 {
            return Ok(());
        }
        let r = self.buf.release();
        r.and(self.buf.rt.drain())
    }
}

impl<'r> Deref for Imported<'r, '_> {
    type Target = Buffer<'r>;
    fn deref(&self) -> &Buffer<'r> {
        &self.buf
    }
}

impl Drop for Imported<'_, '_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

impl<'b> Runtime<'b> {
    /// Imports `tensor` as a buffer of this runtime (dlpack_import)
    /// spanning exactly its elements; the runtime then owns the tensor (its
    /// deleter runs once the buffer's last use completed). On failure the
    /// tensor drops (its deleter runs). A read-only tensor is `T4A_EINVAL`
    /// unless `allow_read_only` (you promise not to write it).
    pub fn dlpack_import<'t>(
        &self,
        tensor: DlTensor<'t>,
        allow_read_only: bool,
    ) -> Result<Imported<'_, 't>> {
        let versioned = tensor.versioned;
        let p = tensor.managed.as_ptr();
        // SAFETY: a live managed tensor of the form `versioned` says; on
        // success the runtime owns it (forgotten below), on failure it is
        // still ours (dropped: its deleter runs).
        let (buf, offset) = unsafe { self.dlpack_import_raw(p, versioned, allow_read_only)? };
        std::mem::forget(tensor);
        Ok(Imported {
            buf,
            offset,
            _src: PhantomData,
        })
    }

    /// Imports a DLPack producer's managed tensor (dlpack_import); returns
    /// the buffer and the offset of element 0 in it.
    ///
    /// # Safety
    /// `tensor` is a live `t4a_dl_managed_tensor` (or, with `versioned`,
    /// `t4a_dl_managed_tensor_versioned`) whose memory stays valid until
    /// its deleter is called. On success the runtime owns it: do not use it
    /// or call its deleter. On failure it is still the caller's.
    pub unsafe fn dlpack_import_raw(
        &self,
        tensor: *mut c_void,
        versioned: bool,
        allow_read_only: bool,
    ) -> Result<(Buffer<'_>, u64)> {
        let flags = (if versioned {
            sys::T4A_DLPACK_VERSIONED
        } else {
            0
        }) | (if allow_read_only {
            sys::T4A_DLPACK_ALLOW_READ_ONLY
        } else {
            0
        });
        let (mut handle, mut offset) = (sys::t4a_buffer::default(), 0u64);
        call!(
            self.backend,
            dlpack_import(self.handle, tensor, flags, &mut handle, &mut offset)
        )?;
        let mut buf = Buffer {
            rt: self,
            handle,
            len: 0,
        };
        let mut len = 0u64;
        call!(self.backend, buffer_size(self.handle, handle, &mut len))?; // else freed
        buf.len = len;
        Ok((buf, offset))
    }
}
