//! Rust bindings of the t4a GPU backend: libt4a_gpu (the loader) and the
//! `t4a_gpu_backend_v1` function table of `<t4a/gpu_backend_v1.h>`.
//!
//! Two layers, no crate dependencies:
//!
//! - [`sys`]: generated from the C headers by `bindgen/t4a_bindgen.py`
//!   (`make bindings-regen`): every struct, handle, constant, status, table
//!   slot and loader function, with the header's comments;
//! - this module: owned objects that release exactly once in `Drop`, with
//!   lifetimes that mirror the header's ownership:
//!
//! ```text
//! Backend ──┬── Runtime<'b> ──┬── Buffer<'r>, HostBuffer<'r>, Graph<'r>, Capture<'r>
//!           │                 ├── Registered<'r, 's> (borrows the slice 's)
//!           │                 ├── Imported<'r, 't>  (borrows the exporter 't)
//!           │                 └── Module<'r> ── Function<'m>
//!           │   Buffer<'r> ──── DlTensor<'a>      (borrows its buffer)
//!           ├── Witness<'b>   (outlives its runtime, as the header says)
//!           └── Artifact<'b>
//! ```
//!
//! A buffer cannot outlive its runtime, nor a runtime its backend: the
//! borrow checker refuses it, so no `Drop` ever calls into a destroyed
//! runtime or an unloaded plugin. Likewise a graph cannot outlive its
//! runtime, an exported DLPack tensor its buffer, and a registration the
//! slice it pinned (each type shows the program that does not compile):
//!
//! ```compile_fail,E0597
//! let backend = t4a_gpu::Backend::open(None)?;
//! let buf = {
//!     let rt = backend.runtime(0)?;
//!     rt.alloc(16)?
//! }; // error: `rt` does not live long enough
//! # Ok::<(), t4a_gpu::Error>(())
//! ```
//!
//! # ABI 1.1
//!
//! Every slot of ABI 1.1 has a method: [`Buffer::memset`] / [`Buffer::fill`];
//! the rectangle copies [`Buffer::write_2d`], [`Buffer::read_2d`],
//! [`Buffer::copy_2d_from`], [`Buffer::copy_2d_from_pinned`],
//! [`HostBuffer::copy_2d_from_device`] (a [`Rect`]); [`Runtime::memory_info`];
//! [`Runtime::register`] / [`Runtime::register_read_only`] (host_register,
//! host_unregister in Drop); [`Witness::elapsed`]; [`Runtime::info`];
//! [`Runtime::launch_ex`] (a [`LaunchExConfig`]: clusters, cooperative,
//! priority); [`Function::max_active_blocks`],
//! [`Function::suggest_block_size`], [`Function::max_active_clusters`];
//! [`Runtime::graph_begin`] / [`Capture::end`] (or [`Runtime::capture`]),
//! [`Graph::launch`], [`Graph::set_kernel_args`], [`Graph::info`], Drop
//! (graph_release); [`Runtime::wrap_external`] (an [`ExternalMemory`]);
//! [`Runtime::order_stream_after`] (stream_wait_witness),
//! [`Runtime::wait_event`], [`Runtime::wait_stream`] (a [`Stream`] or
//! [`Event`]); [`Buffer::dlpack`] and [`Runtime::dlpack_import`] (a
//! [`TensorView`], a [`DlTensor`]). Kernel arguments take scalars, buffers
//! and any `Copy` `#[repr(C)]` value by value ([`Arg::value`]: a struct
//! parameter, as CUDA allows).
//!
//! A slot a backend leaves NULL (the host backend: the raw seam and the
//! consumer-stream slots) is a typed error, `T4A_EUNSUPPORTED` naming the
//! slot, never a call through a null pointer; so is a slot beyond an older
//! plugin's table.
//!
//! Memory the runtime does not own is borrowed until the device is done
//! with it: a [`Registered`] slice and an [`Imported`] tensor end their
//! borrow only after unregistering (freeing) and waiting for the runtime's
//! work so far ([`Runtime::drain`], which works during a capture too).
//!
//! ```no_run
//! let backend = t4a_gpu::Backend::open(None)?; // $T4A_GPU_BACKEND or "cuda"
//! backend.init()?;
//! let rt = backend.runtime(0)?;
//! let buf = rt.alloc(16)?;
//! buf.write(0, b"0123456789abcdef")?;
//! let mut back = [0u8; 16];
//! buf.read(0, &mut back)?;
//! assert_eq!(&back, b"0123456789abcdef");
//! # Ok::<(), t4a_gpu::Error>(())
//! ```
//!
//! # Linking
//!
//! libt4a_gpu is linked (`-lt4a_gpu`) by the build script, which finds it
//! through `$T4A_GPU_LIB_DIR` or `pkg-config t4a-gpu` (see build.rs), and
//! warns, naming what it looked for, when it finds neither. The
//! loader in turn `dlopen`s the backend plugin; no CUDA library is linked.
//!
//! # Threads: why each type is or is not `Send`/`Sync`
//!
//! The header's threading contract: every slot is thread-safe unless its
//! comment says otherwise; calls on one runtime are serialised by that
//! runtime; `witness_wait` does not hold its runtime; `last_error` is per
//! thread (read here right after the failing call, on the same thread);
//! every loader function is thread-safe. Hence:
//!
//! - [`Backend`]: `Send + Sync`. The loader's handle and the table may be
//!   used from any thread; closing (in `Drop`) needs ownership, so it
//!   cannot race with a call.
//! - [`Runtime`]: `Send + Sync`. The runtime serialises its calls. The one
//!   slot that must not race, `runtime_destroy`, runs in `Drop`, which the
//!   borrow checker orders after every borrow (every buffer, module, ...).
//! - [`Buffer`], [`Module`], [`Function`]: `Send + Sync`. Handles used only
//!   through their runtime's serialised slots; their release needs
//!   ownership.
//! - [`HostBuffer`]: `Send + Sync`, like a `Vec<u8>`: shared access reads,
//!   mutation needs `&mut`. The asynchronous pinned copies, which let the
//!   device touch the memory behind Rust's back, are `unsafe`.
//! - [`Witness`], [`Artifact`]: `Send + Sync`. Reference counted by the
//!   backend, thread-safe slots, valid independently of any runtime.
//! - [`Graph`], [`Capture`]: `Send + Sync`. Handles used through their
//!   runtime's serialised slots (a capture is of the runtime's stream, not
//!   of a thread: the driver's relaxed mode), released with ownership.
//! - [`Registered`], [`RegisteredReadOnly`]: `Send + Sync`, as the
//!   `&mut [T]` / `&[T]` they hold (a [`HostBuffer`] over the borrowed
//!   memory).
//! - [`Imported`]: `Send + Sync`, a [`Buffer`] plus a borrow.
//! - [`DlTensor`]: `Send + Sync`. Its fields are memory the export
//!   allocated, only read here; its deleter touches no runtime and may run
//!   on any thread (the header).
//! - [`Stream`], [`Event`]: `Send + Sync`. CUDA stream and event handles
//!   may be used from any thread.
//! - [`Arg`]: `Send + Sync`: a by-value argument is made only from a `&T`
//!   with `T: Sync`.
//! - [`Callback`] (external memory's release, a DLPack export's
//!   on_delete): `Send`, because the backend runs it on whichever thread
//!   reaches the point where it is due; `'static`, because that may be
//!   after every borrow ended. A panic in it aborts (it must not unwind
//!   into C). So an [`ExternalMemory`], which holds one, is `Send` only.
//! - [`RawSection`]: neither. `raw_begin` makes a context current on the
//!   calling thread and the pairs nest per thread, so `raw_end` must run on
//!   the same thread:
//!
//! ```compile_fail,E0277
//! let backend = t4a_gpu::Backend::open(None)?;
//! let rt = backend.runtime(0)?;
//! let section = rt.raw_begin()?;
//! std::thread::scope(|s| {
//!     s.spawn(move || drop(section)); // error: a `RawSection` cannot be sent
//! });
//! # Ok::<(), t4a_gpu::Error>(())
//! ```
//!
//! Every `Send`/`Sync` above is checked at compile time below (and
//! `RawSection`'s absence by its `PhantomData<*const ()>`).
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[allow(missing_docs)] // generated: documented with the header's own comments
#[rustfmt::skip] // generated: `make bindings-regen` writes it, rustfmt must not
pub mod sys;

use std::ffi::{CStr, CString};
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::{self, NonNull};
use std::time::Duration;

pub use sys::Status;

// ---------------------------------------------------------------------------
// Errors.
// ---------------------------------------------------------------------------

/// A failed call: its status, the call, and the backend's detail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The status returned (never `Status::OK`).
    pub status: Status,
    /// The slot or loader function that failed ("runtime_create").
    pub call: &'static str,
    /// The backend's "\<what failed>; \<what to do>" (may be empty).
    pub message: String,
    /// The driver's or compiler's code (0 when none).
    pub native_code: i64,
    /// Its name ("CUDA_ERROR_OUT_OF_MEMORY"; empty when none).
    pub native_name: String,
    /// The compile log of a `T4A_ECOMPILE` from [`Backend::compile`].
    pub log: Option<String>,
}

impl Error {
    fn new(status: c_int, call: &'static str, message: String) -> Error {
        Error {
            status: Status::from_code(status),
            call,
            message,
            native_code: 0,
            native_name: String::new(),
            log: None,
        }
    }

    /// The status code (`T4A_E*`).
    pub fn code(&self) -> c_int {
        self.status.code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let detail = if self.message.is_empty() {
            self.status.message()
        } else {
            &self.message
        };
        write!(
            f,
            "{}: {} ({}): {}",
            self.call,
            self.status.name(),
            self.status.code(),
            detail
        )?;
        if !self.native_name.is_empty() && !self.message.contains(&self.native_name) {
            write!(f, " [{} = {}]", self.native_name, self.native_code)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// `Result` with this crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

/// Borrowed C string -> String ("" for NULL).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: as the caller promises.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// A NUL-padded char array of an info struct -> String.
fn chars(a: &[c_char]) -> String {
    let bytes: Vec<u8> = a
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn c_string(s: &str, call: &'static str) -> Result<CString> {
    CString::new(s).map_err(|_| {
        Error::new(
            sys::T4A_EINVAL,
            call,
            format!("{s:?} contains a NUL byte; pass text without one"),
        )
    })
}

fn loader_check(status: c_int, call: &'static str) -> Result<()> {
    if status == sys::T4A_OK {
        return Ok(());
    }
    // SAFETY: a per-thread static string of the loader, read at once.
    Err(Error::new(status, call, unsafe {
        text(sys::t4a_gpu_last_error())
    }))
}

/// Calls a table slot: `call!(backend, slot(args...))` -> `Result<()>`. A
/// NULL slot (unsupported, or beyond the plugin's table) is T4A_EUNSUPPORTED.
macro_rules! call {
    ($backend:expr, $slot:ident($($arg:expr),* $(,)?)) => {{
        let backend: &$crate::Backend = $backend;
        match backend.table.$slot {
            // SAFETY: the slot has the header's signature (generated from
            // it); the plugin stays loaded while `backend` lives; every call
            // site passes handles of this backend and pointers valid for the
            // call, as commented there.
            Some(f) => backend.check(unsafe { f($($arg),*) }, stringify!($slot)),
            None => Err(backend.unsupported(stringify!($slot))),
        }
    }};
}

// ABI 1.1, in modules of their own (they use `call!`, defined above).
mod exec;
mod interop;
mod memory;

pub use exec::{Capture, Graph, LaunchExConfig, RuntimeInfo};
pub use interop::{
    Callback, DataType, DlTensor, Event, ExternalMemory, Imported, Stream, TensorView,
};
pub use memory::{Fill, Rect, Registered, RegisteredReadOnly};

// ---------------------------------------------------------------------------
// The loader.
// ---------------------------------------------------------------------------

/// libt4a_gpu's version (major, minor, patch).
pub fn loader_version() -> (i32, i32, i32) {
    let (mut a, mut b, mut c) = (0, 0, 0);
    // SAFETY: three valid out-pointers.
    unsafe { sys::t4a_gpu_loader_version(&mut a, &mut b, &mut c) };
    (a, b, c)
}

/// The backend ABI (major, minor) the loader speaks.
pub fn loader_abi() -> (i32, i32) {
    let (mut a, mut b) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { sys::t4a_gpu_loader_abi(&mut a, &mut b) };
    (a, b)
}

/// The plugin directories searched, colon-separated.
pub fn search_path() -> String {
    // SAFETY: a per-thread static string, copied at once.
    unsafe { text(sys::t4a_gpu_search_path()) }
}

/// The configured plugin directory.
pub fn plugin_dir() -> String {
    // SAFETY: a static string.
    unsafe { text(sys::t4a_gpu_plugin_dir()) }
}

/// One installed backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackendEntry {
    /// "cuda"
    pub name: String,
    /// The plugin file.
    pub path: String,
}

/// The installed backends, sorted by name.
pub fn list_backends() -> Result<Vec<BackendEntry>> {
    let mut count = 0usize;
    // SAFETY: capacity 0 with a NULL array only counts.
    loader_check(
        unsafe { sys::t4a_gpu_list(ptr::null_mut(), 0, &mut count) },
        "t4a_gpu_list",
    )?;
    loop {
        let capacity = count;
        let mut entries = vec![sys::t4a_gpu_backend_entry::default(); capacity.max(1)];
        // SAFETY: `entries` holds at least `capacity` entries.
        loader_check(
            unsafe { sys::t4a_gpu_list(entries.as_mut_ptr(), capacity, &mut count) },
            "t4a_gpu_list",
        )?;
        if count <= capacity {
            return Ok(entries[..count]
                .iter()
                .map(|e| BackendEntry {
                    name: chars(&e.name),
                    path: chars(&e.path),
                })
                .collect());
        }
    }
}

// ---------------------------------------------------------------------------
// Backend.
// ---------------------------------------------------------------------------

/// An open backend plugin: `t4a_gpu_open` ... `t4a_gpu_close` (in `Drop`).
pub struct Backend {
    handle: NonNull<sys::t4a_gpu_backend>,
    /// A copy of the loader's table, zero (None) beyond its struct_size: the
    /// loader normalises to its own header, which may be older than these
    /// bindings, so the plugin's table is never read past its end. The
    /// function pointers stay valid while the plugin is loaded (until Drop).
    table: sys::t4a_gpu_backend_v1,
    path: String,
    abi: (u16, u16),
}

// SAFETY: see "Threads" in the crate documentation: the loader and every
// slot are thread-safe; closing needs ownership.
unsafe impl Send for Backend {}
// SAFETY: as above.
unsafe impl Sync for Backend {}

/// Backend facts (`get_info`).
#[derive(Clone, Debug)]
pub struct BackendInfo {
    /// "cuda"
    pub name: String,
    /// The plugin's version.
    pub version: String,
    /// The plugin's ABI (major, minor).
    pub abi: (u16, u16),
    /// e.g. 12080 for CUDA 12.8; 0 before init.
    pub driver_version: i32,
    /// The driver library's file.
    pub driver_path: String,
    /// Devices (0 before init).
    pub device_count: i32,
}

/// One device (`device_info`), with the raw struct for every other field.
#[derive(Clone, Debug)]
pub struct Device {
    /// 0 .. count-1
    pub ordinal: i32,
    /// "NVIDIA H200"
    pub name: String,
    /// Compute capability (major, minor).
    pub cc: (i32, i32),
    /// Bytes.
    pub total_memory: u64,
    /// "0000:3b:00.0"
    pub pci_bus_id: String,
    /// Streaming multiprocessors.
    pub multiprocessors: i32,
    /// Everything the backend reported.
    pub raw: sys::t4a_device_info,
}

/// Whether the run-time compiler is usable (`compiler_info`).
#[derive(Clone, Debug)]
pub struct CompilerInfo {
    /// `Status::OK` when usable.
    pub status: Status,
    /// NVRTC (major, minor); (0, 0) when unavailable.
    pub version: (i32, i32),
    /// The library's file, or "".
    pub path: String,
    /// Why it is unavailable, or "".
    pub reason: String,
}

impl Backend {
    /// Opens a backend by name ("cuda"), by path (a spec containing '/'), or
    /// the default ($T4A_GPU_BACKEND, else "cuda") for `None`. Does not
    /// initialise it: call [`Backend::init`].
    pub fn open(spec: Option<&str>) -> Result<Backend> {
        let spec = spec.map(|s| c_string(s, "t4a_gpu_open")).transpose()?;
        let mut handle = ptr::null_mut();
        // SAFETY: `spec` is NULL or a C string; `handle` an out-pointer.
        let status = unsafe {
            sys::t4a_gpu_open(
                spec.as_ref().map_or(ptr::null(), |s| s.as_ptr()),
                &mut handle,
            )
        };
        loader_check(status, "t4a_gpu_open")?;
        Backend::adopt(handle)
    }

    /// Opens exactly the plugin file at `path` (never searched).
    pub fn open_path(path: &str) -> Result<Backend> {
        let path = c_string(path, "t4a_gpu_open_path")?;
        let mut handle = ptr::null_mut();
        // SAFETY: a C string and an out-pointer.
        let status = unsafe { sys::t4a_gpu_open_path(path.as_ptr(), &mut handle) };
        loader_check(status, "t4a_gpu_open_path")?;
        Backend::adopt(handle)
    }

    fn adopt(handle: *mut sys::t4a_gpu_backend) -> Result<Backend> {
        let handle = NonNull::new(handle).ok_or_else(|| {
            Error::new(
                sys::T4A_EINTERNAL,
                "t4a_gpu_open",
                "the loader returned no backend".into(),
            )
        })?;
        let mut backend = Backend {
            handle,
            table: sys::t4a_gpu_backend_v1::default(),
            path: String::new(),
            abi: (0, 0),
        };
        // SAFETY: `handle` is open; the table it returns begins with
        // struct_size (the loader validated it) and holds struct_size bytes,
        // of which at most size_of::<table>() are copied.
        unsafe {
            let table = sys::t4a_gpu_backend_table(handle.as_ptr());
            if table.is_null() {
                return Err(Error::new(
                    sys::T4A_EINTERNAL,
                    "t4a_gpu_backend_table",
                    "the loader returned no table".into(),
                ));
            }
            let n = ((*table).struct_size as usize).min(size_of::<sys::t4a_gpu_backend_v1>());
            ptr::copy_nonoverlapping(
                table as *const u8,
                ptr::addr_of_mut!(backend.table) as *mut u8,
                n,
            );
            backend.table.struct_size = n as u32;
            backend.path = text(sys::t4a_gpu_backend_path(handle.as_ptr()));
            sys::t4a_gpu_backend_abi(handle.as_ptr(), &mut backend.abi.0, &mut backend.abi.1);
        }
        Ok(backend)
    }

    /// The plugin file (resolved).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The plugin's ABI (major, minor).
    pub fn abi(&self) -> (u16, u16) {
        self.abi
    }

    /// The function table (slots beyond the plugin's read as `None`). For
    /// slots the safe layer does not wrap yet: call them through [`sys`].
    pub fn table(&self) -> &sys::t4a_gpu_backend_v1 {
        &self.table
    }

    fn check(&self, status: c_int, call: &'static str) -> Result<()> {
        if status == sys::T4A_OK {
            return Ok(());
        }
        let mut e = Error::new(status, call, String::new());
        let mut info = sys::t4a_error_info::sized();
        if let Some(last_error) = self.table.last_error {
            // SAFETY: a valid info struct; its strings are valid until this
            // thread's next call into the backend, so they are copied now.
            if unsafe { last_error(&mut info) } == sys::T4A_OK {
                // SAFETY: as above.
                unsafe {
                    e.message = text(info.message);
                    e.native_name = text(info.native_name);
                }
                e.native_code = info.native_code;
            }
        }
        Err(e)
    }

    fn unsupported(&self, slot: &'static str) -> Error {
        Error::new(
            sys::T4A_EUNSUPPORTED,
            slot,
            format!(
                "the backend {} (ABI {}.{}) does not provide {slot} (its slot is NULL: the \
                 header's comment on {slot} says what a backend without it does; a plugin \
                 older than the slot lacks it too)",
                self.path, self.abi.0, self.abi.1
            ),
        )
    }

    /// Loads and initialises the driver (idempotent; a failure is final for
    /// the loaded plugin).
    pub fn init(&self) -> Result<()> {
        call!(self, init())
    }

    /// Backend name, version and driver facts.
    pub fn info(&self) -> Result<BackendInfo> {
        let mut i = sys::t4a_backend_info::sized();
        call!(self, get_info(&mut i))?;
        Ok(BackendInfo {
            name: chars(&i.name),
            version: chars(&i.version),
            abi: (i.abi_major, i.abi_minor),
            driver_version: i.driver_version,
            driver_path: chars(&i.driver_path),
            device_count: i.device_count,
        })
    }

    /// Number of devices.
    pub fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        call!(self, device_count(&mut n))?;
        Ok(n)
    }

    /// Facts of device `ordinal`.
    pub fn device(&self, ordinal: i32) -> Result<Device> {
        let mut d = sys::t4a_device_info::sized();
        call!(self, device_info(ordinal, &mut d))?;
        Ok(Device {
            ordinal: d.ordinal,
            name: chars(&d.name),
            cc: (d.cc_major, d.cc_minor),
            total_memory: d.total_memory,
            pci_bus_id: chars(&d.pci_bus_id),
            multiprocessors: d.multiprocessors,
            raw: d,
        })
    }

    /// Every device.
    pub fn devices(&self) -> Result<Vec<Device>> {
        (0..self.device_count()?).map(|i| self.device(i)).collect()
    }

    /// Whether the run-time compiler can be used, or why not.
    pub fn compiler_info(&self) -> Result<CompilerInfo> {
        let mut c = sys::t4a_compiler_info::sized();
        call!(self, compiler_info(&mut c))?;
        Ok(CompilerInfo {
            status: Status::from_code(c.status),
            version: (c.version_major, c.version_minor),
            path: chars(&c.path),
            reason: chars(&c.reason),
        })
    }

    /// Whether device `src` can access device `dst`'s memory directly.
    pub fn peer_access_supported(&self, src: i32, dst: i32) -> Result<bool> {
        let mut ok = false;
        call!(self, peer_access_supported(src, dst, &mut ok))?;
        Ok(ok)
    }

    /// A new runtime on `device` with default options.
    pub fn runtime(&self, device: i32) -> Result<Runtime<'_>> {
        self.runtime_with(device, None)
    }

    /// A new runtime on `device` with `options` (struct_size is set here).
    pub fn runtime_with(
        &self,
        device: i32,
        options: Option<&sys::t4a_runtime_options>,
    ) -> Result<Runtime<'_>> {
        let opts = options.map(|o| sys::t4a_runtime_options {
            struct_size: size_of::<sys::t4a_runtime_options>() as u32,
            ..*o
        });
        let mut handle = sys::t4a_runtime::default();
        // opts: NULL or a valid options struct; handle: an out-pointer.
        call!(
            self,
            runtime_create(
                device,
                opts.as_ref().map_or(ptr::null(), |o| o as *const _),
                &mut handle
            )
        )?;
        Ok(Runtime {
            backend: self,
            handle,
            device,
            capture_base: std::sync::Mutex::new(0),
        })
    }

    /// Compiles CUDA C for device `device`'s architecture (or, with `device`
    /// -1, the one the options name). A compile error is `T4A_ECOMPILE`
    /// with the compiler's log in [`Error::log`].
    pub fn compile(
        &self,
        source: &str,
        device: i32,
        options: &CompileOptions,
    ) -> Result<Artifact<'_>> {
        let src = c_string(source, "artifact_compile")?;
        let name = options
            .name
            .as_deref()
            .map(|n| c_string(n, "artifact_compile"))
            .transpose()?;
        let opts: Vec<CString> = options
            .options
            .iter()
            .map(|o| c_string(o, "artifact_compile"))
            .collect::<Result<_>>()?;
        let ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let o = sys::t4a_compile_options {
            flags: (if options.ptx { sys::T4A_COMPILE_PTX } else { 0 })
                | (if options.no_cache {
                    sys::T4A_COMPILE_NO_CACHE
                } else {
                    0
                }),
            source: src.as_ptr(),
            source_size: source.len() as u64,
            name: name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
            options: if ptrs.is_empty() {
                ptr::null()
            } else {
                ptrs.as_ptr()
            },
            option_count: ptrs.len() as u32,
            device_ordinal: device,
            ..sys::t4a_compile_options::sized()
        };
        let mut handle = sys::t4a_artifact::default();
        // Every pointer in `o` lives until the call returns.
        match call!(self, artifact_compile(&o, &mut handle)) {
            Ok(()) => Ok(Artifact {
                backend: self,
                handle,
            }),
            Err(mut e) => {
                if e.status == Status::ECOMPILE && handle.bits != 0 {
                    let artifact = Artifact {
                        backend: self,
                        handle,
                    };
                    e.log = artifact.log().ok();
                }
                Err(e)
            }
        }
    }

    /// Wraps PTX text, CUBIN or fatbin bytes (`kind`: `sys::T4A_ARTIFACT_*`; copied).
    pub fn artifact_from_bytes(
        &self,
        kind: sys::t4a_artifact_kind,
        data: &[u8],
        name: Option<&str>,
    ) -> Result<Artifact<'_>> {
        let name = name
            .map(|n| c_string(n, "artifact_from_bytes"))
            .transpose()?;
        let mut handle = sys::t4a_artifact::default();
        call!(
            self,
            artifact_from_bytes(
                kind,
                data.as_ptr() as *const c_void,
                data.len() as u64,
                name.as_ref().map_or(ptr::null(), |n| n.as_ptr()),
                &mut handle
            )
        )?;
        Ok(Artifact {
            backend: self,
            handle,
        })
    }

    /// The compiled-artifact caches' statistics.
    pub fn compile_cache_stats(&self) -> Result<sys::t4a_compile_cache_stats> {
        let mut s = sys::t4a_compile_cache_stats::sized();
        call!(self, compile_cache_stats(&mut s))?;
        Ok(s)
    }

    /// Empties the memory and/or disk caches of compiled artifacts.
    pub fn compile_cache_clear(&self, memory: bool, disk: bool) -> Result<()> {
        let which = (if memory { sys::T4A_CACHE_MEMORY } else { 0 })
            | (if disk { sys::T4A_CACHE_DISK } else { 0 });
        call!(self, compile_cache_clear(which))
    }
}

impl Drop for Backend {
    /// Drops this open (the plugin unloads at its last close). Every object
    /// of the backend borrowed it, so all of them were released before.
    fn drop(&mut self) {
        // SAFETY: opened once, closed once.
        unsafe { sys::t4a_gpu_close(self.handle.as_ptr()) };
    }
}

impl fmt::Debug for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backend")
            .field("path", &self.path)
            .field("abi", &self.abi)
            .finish()
    }
}

/// Options of [`Backend::compile`].
#[derive(Clone, Debug, Default)]
pub struct CompileOptions {
    /// File name for diagnostics (default "t4a.cu").
    pub name: Option<String>,
    /// NVRTC options, e.g. "-default-device".
    pub options: Vec<String>,
    /// Produce PTX instead of CUBIN.
    pub ptx: bool,
    /// Bypass the memory and disk caches.
    pub no_cache: bool,
}

fn timeout_ns(timeout: Option<Duration>) -> u64 {
    timeout.map_or(sys::T4A_WAIT_FOREVER, |d| {
        u64::try_from(d.as_nanos()).unwrap_or(sys::T4A_WAIT_FOREVER - 1)
    })
}

// ---------------------------------------------------------------------------
// Witnesses and artifacts: owned by the backend.
// ---------------------------------------------------------------------------

/// A completion token from [`Runtime::seal`]; valid after its runtime is
/// destroyed. Drop releases this reference; `try_clone` takes another.
#[derive(Debug)]
pub struct Witness<'b> {
    backend: &'b Backend,
    handle: sys::t4a_witness,
}

impl<'b> Witness<'b> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_witness {
        self.handle
    }

    /// Ok(true) when the covered work completed, Ok(false) when not yet;
    /// `T4A_EDEVICEFAULT` when it failed. Never blocks.
    pub fn query(&self) -> Result<bool> {
        match call!(self.backend, witness_query(self.handle)) {
            Ok(()) => Ok(true),
            Err(e) if e.status == Status::ENOTREADY => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Blocks until the covered work completed (`None`: no limit;
    /// `T4A_ETIMEOUT` after `timeout`).
    pub fn wait(&self, timeout: Option<Duration>) -> Result<()> {
        call!(self.backend, witness_wait(self.handle, timeout_ns(timeout)))
    }

    /// Another reference to the same witness.
    pub fn try_clone(&self) -> Result<Witness<'b>> {
        call!(self.backend, witness_retain(self.handle))?;
        Ok(Witness {
            backend: self.backend,
            handle: self.handle,
        })
    }
}

impl Drop for Witness<'_> {
    fn drop(&mut self) {
        let _ = call!(self.backend, witness_release(self.handle));
    }
}

/// Compiled or loaded code. Modules loaded from it stay loaded after Drop.
#[derive(Debug)]
pub struct Artifact<'b> {
    backend: &'b Backend,
    handle: sys::t4a_artifact,
}

impl Artifact<'_> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_artifact {
        self.handle
    }

    /// The compile log (possibly empty).
    pub fn log(&self) -> Result<String> {
        let (mut p, mut n) = (ptr::null(), 0u64);
        call!(self.backend, artifact_log(self.handle, &mut p, &mut n))?;
        if p.is_null() {
            return Ok(String::new());
        }
        // SAFETY: `n` bytes at `p`, valid until the artifact's release.
        let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) };
        Ok(String::from_utf8_lossy(bytes).into_owned())
    }

    /// The code's kind (`sys::T4A_ARTIFACT_*`) and bytes (copied).
    pub fn data(&self) -> Result<(sys::t4a_artifact_kind, Vec<u8>)> {
        let (mut kind, mut p, mut n) = (0, ptr::null(), 0u64);
        call!(
            self.backend,
            artifact_data(self.handle, &mut kind, &mut p, &mut n)
        )?;
        if p.is_null() {
            return Ok((kind, Vec::new()));
        }
        // SAFETY: `n` bytes at `p`, valid until the artifact's release.
        Ok((
            kind,
            unsafe { std::slice::from_raw_parts(p as *const u8, n as usize) }.to_vec(),
        ))
    }
}

impl Drop for Artifact<'_> {
    fn drop(&mut self) {
        let _ = call!(self.backend, artifact_release(self.handle));
    }
}

// ---------------------------------------------------------------------------
// Runtime.
// ---------------------------------------------------------------------------

/// One device, one stream, one memory pool; destroyed in Drop (waiting for
/// its outstanding work) or by [`Runtime::close`].
#[derive(Debug)]
pub struct Runtime<'b> {
    backend: &'b Backend,
    handle: sys::t4a_runtime,
    device: i32,
    /// While a capture made by [`Runtime::graph_begin`] is in progress: a
    /// witness (its bits) covering the work enqueued before it, which
    /// [`Runtime::drain`] waits for then (seal is refused during a capture).
    capture_base: std::sync::Mutex<u64>,
}

/// Plain values that may be copied to and from device memory as bytes.
///
/// # Safety
/// Every bit pattern is a valid value and the type has no padding.
pub unsafe trait Plain: Copy + 'static {}
// SAFETY (each): primitive numbers: no padding, every bit pattern valid.
unsafe impl Plain for u8 {}
// SAFETY: as above.
unsafe impl Plain for i8 {}
// SAFETY: as above.
unsafe impl Plain for u16 {}
// SAFETY: as above.
unsafe impl Plain for i16 {}
// SAFETY: as above.
unsafe impl Plain for u32 {}
// SAFETY: as above.
unsafe impl Plain for i32 {}
// SAFETY: as above.
unsafe impl Plain for u64 {}
// SAFETY: as above.
unsafe impl Plain for i64 {}
// SAFETY: as above.
unsafe impl Plain for f32 {}
// SAFETY: as above.
unsafe impl Plain for f64 {}

fn byte_len<T>(s: &[T]) -> u64 {
    std::mem::size_of_val(s) as u64
}

/// Grid and block of a launch (unused dimensions 1) and dynamic shared bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks per dimension (each >= 1).
    pub grid: [u32; 3],
    /// Threads per block per dimension (each >= 1).
    pub block: [u32; 3],
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
}

impl LaunchConfig {
    /// A one-dimensional launch.
    pub fn linear(grid: u32, block: u32) -> LaunchConfig {
        LaunchConfig {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            shared_bytes: 0,
        }
    }
}

/// A kernel argument: a value of an explicit C type, or a buffer (passed as
/// its device address). `From` makes `5u64.into()`, `(&buffer).into()` work.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// uint8_t
    U8(u8),
    /// int8_t
    I8(i8),
    /// uint16_t
    U16(u16),
    /// int16_t
    I16(i16),
    /// uint32_t / unsigned int
    U32(u32),
    /// int32_t / int
    I32(i32),
    /// uint64_t / unsigned long long
    U64(u64),
    /// int64_t / long long
    I64(i64),
    /// float
    F32(f32),
    /// double
    F64(f64),
    /// A device pointer: the buffer's address.
    Buffer(&'a Buffer<'a>),
    /// A value passed by value, as its bytes: a `#[repr(C)]` struct
    /// argument (see [`Arg::value`]).
    Value(ArgValue<'a>),
}

/// The bytes of a by-value kernel argument, borrowed for the launch.
#[derive(Clone, Copy, Debug)]
pub struct ArgValue<'a> {
    ptr: *const u8,
    size: usize,
    align: usize,
    _borrow: PhantomData<&'a ()>,
}

// SAFETY: made only from a `&'a T` with `T: Sync` (Arg::value): sending or
// sharing it is sending or sharing that reference.
unsafe impl Send for ArgValue<'_> {}
// SAFETY: as above.
unsafe impl Sync for ArgValue<'_> {}

impl<'a> Arg<'a> {
    /// `value` passed by value, as CUDA passes a struct parameter: its
    /// `size_of::<T>()` bytes are copied into the argument block at the
    /// launch (padding included, never read by Rust). `T` should be
    /// `#[repr(C)]` with the kernel parameter's layout (`struct { double x;
    /// unsigned n; }` is `#[repr(C)] struct P { x: f64, n: u32 }`, 16 bytes).
    /// Nothing can check that: the header has no slot that reports a
    /// kernel's parameter sizes. A parameter larger than the value reads
    /// the block's zeroed slack ([`ARG_SLACK`] bytes past the last value),
    /// never memory past it.
    pub fn value<T: Copy + Sync>(value: &'a T) -> Arg<'a> {
        Arg::Value(ArgValue {
            ptr: value as *const T as *const u8,
            size: size_of::<T>(),
            align: std::mem::align_of::<T>(),
            _borrow: PhantomData,
        })
    }
}

/// Zeroed bytes after the last value of every kernel argument block: a
/// parameter that is larger than the value given for it reads zeros there.
pub const ARG_SLACK: usize = 4096;

/// 16-byte aligned storage of an argument block.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct ArgChunk([u8; 16]);

/// A launch's argument block and the `void **` pointing into it.
struct ArgBlock {
    _storage: Vec<std::mem::MaybeUninit<ArgChunk>>,
    pointers: Vec<*mut c_void>,
}

impl ArgBlock {
    /// The values of `args` at aligned offsets (8 bytes for each scalar and
    /// buffer, the value's size for [`Arg::Value`]), each buffer checked to
    /// belong to `rt`, the rest zero, then [`ARG_SLACK`] zero bytes.
    fn new(rt: &Runtime<'_>, args: &[Arg<'_>], call: &'static str) -> Result<ArgBlock> {
        let mut offsets = Vec::with_capacity(args.len());
        let mut end = 0usize;
        for arg in args {
            let (size, align) = match arg {
                Arg::Value(v) => (v.size, v.align.clamp(8, 16)),
                _ => (8, 8),
            };
            let at = (end + align - 1) / align * align;
            offsets.push(at);
            end = at + size;
        }
        let chunks = (end + ARG_SLACK + 15) / 16;
        let mut storage = vec![std::mem::MaybeUninit::new(ArgChunk([0; 16])); chunks];
        let base = storage.as_mut_ptr() as *mut u8;
        for (arg, &at) in args.iter().zip(&offsets) {
            // SAFETY: every write lies in the block (`at` + its size <= end),
            // at an offset aligned for its type.
            unsafe {
                let p = base.add(at);
                match *arg {
                    Arg::U8(v) => p.write(v),
                    Arg::I8(v) => p.cast::<i8>().write(v),
                    Arg::U16(v) => p.cast::<u16>().write(v),
                    Arg::I16(v) => p.cast::<i16>().write(v),
                    Arg::U32(v) => p.cast::<u32>().write(v),
                    Arg::I32(v) => p.cast::<i32>().write(v),
                    Arg::U64(v) => p.cast::<u64>().write(v),
                    Arg::I64(v) => p.cast::<i64>().write(v),
                    Arg::F32(v) => p.cast::<f32>().write(v),
                    Arg::F64(v) => p.cast::<f64>().write(v),
                    Arg::Buffer(b) => {
                        if b.rt.handle != rt.handle {
                            return Err(Error::new(
                                sys::T4A_EINVAL,
                                call,
                                "a buffer argument belongs to another runtime; copy it here"
                                    .into(),
                            ));
                        }
                        p.cast::<u64>().write(b.address()?)
                    }
                    // An untyped copy of the value's bytes (padding included):
                    // the value is borrowed for 'a, so it is live here.
                    Arg::Value(v) => ptr::copy_nonoverlapping(v.ptr, p, v.size),
                }
            }
        }
        let pointers = offsets
            .iter()
            // SAFETY: in bounds of the block, as above.
            .map(|&at| unsafe { base.add(at) } as *mut c_void)
            .collect();
        Ok(ArgBlock {
            _storage: storage,
            pointers,
        })
    }

    /// The `void **args` of launch (valid while the block lives).
    fn as_args(&mut self) -> *mut *mut c_void {
        if self.pointers.is_empty() {
            ptr::null_mut()
        } else {
            self.pointers.as_mut_ptr()
        }
    }
}

macro_rules! arg_from {
    ($($t:ty => $v:ident),*) => {$(
        impl From<$t> for Arg<'_> {
            fn from(x: $t) -> Self {
                Arg::$v(x)
            }
        }
    )*};
}
arg_from!(u8 => U8, i8 => I8, u16 => U16, i16 => I16, u32 => U32, i32 => I32, u64 => U64,
          i64 => I64, f32 => F32, f64 => F64);

impl<'a> From<&'a Buffer<'a>> for Arg<'a> {
    fn from(b: &'a Buffer<'a>) -> Self {
        Arg::Buffer(b)
    }
}

impl<'b> Runtime<'b> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_runtime {
        self.handle
    }

    /// The device ordinal.
    pub fn device(&self) -> i32 {
        self.device
    }

    /// The backend.
    pub fn backend(&self) -> &'b Backend {
        self.backend
    }

    /// Destroys the runtime, waiting up to `timeout` (None: no limit). On
    /// `T4A_ETIMEOUT` nothing was released: the runtime comes back, usable.
    /// A device fault destroys it and is returned (`T4A_EDEVICEFAULT`).
    pub fn close(
        mut self,
        timeout: Option<Duration>,
    ) -> std::result::Result<(), (Error, Option<Self>)> {
        let r = call!(
            self.backend,
            runtime_destroy(self.handle, timeout_ns(timeout))
        );
        match r {
            Ok(()) => {
                self.handle = sys::t4a_runtime::default();
                Ok(())
            }
            Err(e) if e.status == Status::ETIMEOUT => Err((e, Some(self))),
            Err(e) => {
                self.handle = sys::t4a_runtime::default(); // stale in any case
                Err((e, None))
            }
        }
    }

    /// `bytes` of device memory (content undefined).
    pub fn alloc(&self, bytes: u64) -> Result<Buffer<'_>> {
        let mut handle = sys::t4a_buffer::default();
        call!(self.backend, buffer_alloc(self.handle, bytes, &mut handle))?;
        Ok(Buffer {
            rt: self,
            handle,
            len: bytes,
        })
    }

    /// `bytes` (> 0) of pinned host memory.
    pub fn host_alloc(&self, bytes: u64, write_combined: bool) -> Result<HostBuffer<'_>> {
        let (mut handle, mut p) = (sys::t4a_host_buffer::default(), ptr::null_mut());
        let flags = if write_combined {
            sys::T4A_HOST_WRITE_COMBINED
        } else {
            0
        };
        call!(
            self.backend,
            host_alloc(self.handle, bytes, flags, &mut handle, &mut p)
        )?;
        Ok(HostBuffer {
            rt: self,
            handle,
            ptr: p as *mut u8,
            len: bytes as usize,
            registered: false,
        })
    }

    /// A witness covering all work enqueued so far.
    pub fn seal(&self) -> Result<Witness<'b>> {
        let mut handle = sys::t4a_witness::default();
        call!(self.backend, seal(self.handle, &mut handle))?;
        Ok(Witness {
            backend: self.backend,
            handle,
        })
    }

    /// Seals and waits: returns once all enqueued work completed.
    pub fn synchronize(&self) -> Result<()> {
        self.seal()?.wait(None)
    }

    /// Waits until the work enqueued so far completed, also during a
    /// capture (where `seal` is refused: it waits for a witness taken just
    /// before [`Runtime::graph_begin`]; the captured work has not run).
    /// What the borrows of memory the runtime does not own
    /// ([`Registered`], [`Imported`]) do before they end.
    pub fn drain(&self) -> Result<()> {
        loop {
            let e = match self.seal() {
                Ok(w) => return w.wait(None),
                Err(e) if e.status == Status::EBUSY => e,
                Err(e) => return Err(e),
            };
            // Capturing. The base witness is taken (retained) under the lock
            // that graph_begin holds until it stored it, so a capture begun
            // through this layer always has one here.
            let held = {
                let base = self.capture_base.lock().unwrap_or_else(|p| p.into_inner());
                if *base == 0 {
                    None
                } else {
                    call!(
                        self.backend,
                        witness_retain(sys::t4a_witness { bits: *base })
                    )?;
                    Some(Witness {
                        backend: self.backend,
                        handle: sys::t4a_witness { bits: *base },
                    })
                }
            };
            match held {
                Some(w) => return w.wait(None),
                // The capture ended meanwhile: seal again. Still capturing
                // without a base: begun through the raw table.
                None if !self.info()?.capturing => continue,
                None => return Err(e),
            }
        }
    }

    fn check_function(&self, f: &Function<'_>, call: &'static str) -> Result<()> {
        if f.module.rt.handle != self.handle {
            return Err(Error::new(
                sys::T4A_EINVAL,
                call,
                "the function belongs to another runtime; load the module here".into(),
            ));
        }
        Ok(())
    }

    /// Work enqueued after this call runs after `w`'s (GPU-side wait).
    pub fn wait_for(&self, w: &Witness<'_>) -> Result<()> {
        call!(self.backend, runtime_wait_witness(self.handle, w.handle))
    }

    /// A snapshot of the counters.
    pub fn counters(&self) -> Result<sys::t4a_runtime_counters> {
        let mut c = sys::t4a_runtime_counters::sized();
        call!(self.backend, runtime_counters(self.handle, &mut c))?;
        Ok(c)
    }

    /// The block cache's statistics.
    pub fn cache_stats(&self) -> Result<sys::t4a_cache_stats> {
        let mut c = sys::t4a_cache_stats::sized();
        call!(self.backend, cache_stats(self.handle, &mut c))?;
        Ok(c)
    }

    /// Returns cached blocks until at most `keep_bytes` remain.
    pub fn cache_trim(&self, keep_bytes: u64) -> Result<()> {
        call!(self.backend, cache_trim(self.handle, keep_bytes))
    }

    /// Compiles for this runtime's device (see [`Backend::compile`]).
    pub fn compile(&self, source: &str, options: &CompileOptions) -> Result<Artifact<'b>> {
        self.backend.compile(source, self.device, options)
    }

    /// Loads `artifact` into this runtime.
    pub fn load(&self, artifact: &Artifact<'_>) -> Result<Module<'_>> {
        let mut handle = sys::t4a_module::default();
        call!(
            self.backend,
            module_load(self.handle, artifact.handle, &mut handle)
        )?;
        Ok(Module { rt: self, handle })
    }

    /// Enqueues `f` with `args` (each of the kernel parameter's exact type).
    pub fn launch(&self, f: &Function<'_>, cfg: &LaunchConfig, args: &[Arg<'_>]) -> Result<()> {
        self.check_function(f, "launch")?;
        let mut block = ArgBlock::new(self, args, "launch")?;
        let config = sys::t4a_launch_config {
            grid: cfg.grid,
            block: cfg.block,
            shared_bytes: cfg.shared_bytes,
            ..sys::t4a_launch_config::sized()
        };
        // `block` lives until the call returns.
        call!(
            self.backend,
            launch(self.handle, f.handle, &config, block.as_args())
        )
    }

    /// The driver objects behind the runtime (the raw seam).
    pub fn raw(&self) -> Result<sys::t4a_raw_runtime> {
        let mut r = sys::t4a_raw_runtime::sized();
        call!(self.backend, raw_runtime(self.handle, &mut r))?;
        Ok(r)
    }

    /// Makes the runtime's context current on this thread until the
    /// returned section drops (`raw_begin` ... `raw_end`), for work the
    /// consumer enqueues on the raw stream.
    pub fn raw_begin(&self) -> Result<RawSection<'_>> {
        let mut section = sys::t4a_raw_section::sized();
        call!(self.backend, raw_begin(self.handle, &mut section))?;
        Ok(RawSection {
            rt: self,
            section,
            _not_send: PhantomData,
        })
    }
}

impl Drop for Runtime<'_> {
    /// Waits for the outstanding work, then releases everything the runtime
    /// owns (all its buffers, modules, ... were dropped before: they borrow it).
    fn drop(&mut self) {
        if self.handle.bits != 0 {
            let _ = call!(
                self.backend,
                runtime_destroy(self.handle, sys::T4A_WAIT_FOREVER)
            );
        }
    }
}

/// A `raw_begin` ... `raw_end` pair; ends (restoring the previous context)
/// in Drop. Not `Send`: the context is current on the thread that began it.
#[derive(Debug)]
pub struct RawSection<'r> {
    rt: &'r Runtime<'r>,
    section: sys::t4a_raw_section,
    _not_send: PhantomData<*const ()>,
}

impl RawSection<'_> {
    /// Ends the section with the status checked.
    pub fn end(self) -> Result<()> {
        let r = call!(self.rt.backend, raw_end(self.rt.handle, &self.section));
        std::mem::forget(self);
        r
    }
}

impl Drop for RawSection<'_> {
    fn drop(&mut self) {
        let _ = call!(self.rt.backend, raw_end(self.rt.handle, &self.section));
    }
}

// ---------------------------------------------------------------------------
// Buffers, modules, functions: owned by a runtime.
// ---------------------------------------------------------------------------

/// Device memory of one runtime; freed (stream-ordered) in Drop.
#[derive(Debug)]
pub struct Buffer<'r> {
    rt: &'r Runtime<'r>,
    handle: sys::t4a_buffer,
    len: u64,
}

impl<'r> Buffer<'r> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_buffer {
        self.handle
    }

    /// The size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the size is 0.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The runtime owning it.
    pub fn runtime(&self) -> &'r Runtime<'r> {
        self.rt
    }

    /// The device address (CUdeviceptr).
    pub fn address(&self) -> Result<u64> {
        let mut a = 0u64;
        call!(
            self.rt.backend,
            buffer_device_address(self.rt.handle, self.handle, &mut a)
        )?;
        Ok(a)
    }

    /// Copies `data` to the buffer at byte `offset` (pageable, through the
    /// staging); returns once `data` may be reused.
    pub fn write<T: Plain>(&self, offset: u64, data: &[T]) -> Result<()> {
        call!(
            self.rt.backend,
            copy_h2d(
                self.rt.handle,
                self.handle,
                offset,
                data.as_ptr() as *const c_void,
                byte_len(data)
            )
        )
    }

    /// Fills `out` from the buffer at byte `offset`; waits for the work
    /// ahead of it.
    pub fn read<T: Plain>(&self, offset: u64, out: &mut [T]) -> Result<()> {
        let n = byte_len(out);
        call!(
            self.rt.backend,
            copy_d2h(
                self.rt.handle,
                out.as_mut_ptr() as *mut c_void,
                self.handle,
                offset,
                n
            )
        )
    }

    /// Enqueues a copy of `bytes` from `src` at `src_offset` to this buffer
    /// at `offset`: within the runtime (copy_d2d), from another runtime of
    /// the same device (copy_from_runtime) or of another device
    /// (copy_from_peer; `T4A_EUNSUPPORTED` without peer access, see
    /// [`Buffer::copy_from_via_host`]).
    pub fn copy_from(
        &self,
        offset: u64,
        src: &Buffer<'_>,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        let (b, rt) = (self.rt.backend, self.rt.handle);
        if src.rt.handle == rt {
            call!(
                b,
                copy_d2d(rt, self.handle, offset, src.handle, src_offset, bytes)
            )
        } else if src.rt.device == self.rt.device {
            call!(
                b,
                copy_from_runtime(
                    rt,
                    self.handle,
                    offset,
                    src.rt.handle,
                    src.handle,
                    src_offset,
                    bytes
                )
            )
        } else {
            call!(
                b,
                copy_from_peer(
                    rt,
                    self.handle,
                    offset,
                    src.rt.handle,
                    src.handle,
                    src_offset,
                    bytes
                )
            )
        }
    }

    /// Like [`Buffer::copy_from`] for another runtime's buffer, explicitly
    /// through both runtimes' host staging (copy_from_peer_via_host).
    pub fn copy_from_via_host(
        &self,
        offset: u64,
        src: &Buffer<'_>,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        call!(
            self.rt.backend,
            copy_from_peer_via_host(
                self.rt.handle,
                self.handle,
                offset,
                src.rt.handle,
                src.handle,
                src_offset,
                bytes
            )
        )
    }

    /// Enqueues the asynchronous copy of `bytes` of pinned `src` (at
    /// `src_offset`) to this buffer at `offset` (copy_h2d_pinned).
    ///
    /// # Safety
    /// The device reads `src` after this returns: do not write it until a
    /// witness covering the copy is ready.
    pub unsafe fn copy_from_pinned(
        &self,
        offset: u64,
        src: &HostBuffer<'_>,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        call!(
            self.rt.backend,
            copy_h2d_pinned(
                self.rt.handle,
                self.handle,
                offset,
                src.handle,
                src_offset,
                bytes
            )
        )
    }
}

impl Buffer<'_> {
    /// Frees the buffer now with the status checked (Drop ignores it).
    pub fn free(mut self) -> Result<()> {
        self.release()
    }

    fn release(&mut self) -> Result<()> {
        if self.handle.bits == 0 {
            return Ok(());
        }
        let h = std::mem::take(&mut self.handle);
        call!(self.rt.backend, buffer_free(self.rt.handle, h))
    }
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// Pinned host memory of one runtime; freed in Drop (reused only after the
/// work using it completed).
#[derive(Debug)]
pub struct HostBuffer<'r> {
    rt: &'r Runtime<'r>,
    handle: sys::t4a_host_buffer,
    ptr: *mut u8,
    len: usize,
    /// Made by host_register (the consumer's memory): released by
    /// host_unregister and a [`Runtime::drain`], not host_free.
    registered: bool,
}

// SAFETY: owned memory like a Vec<u8> (shared reads, `&mut` writes); the
// slots it calls are thread-safe; see "Threads" in the crate docs.
unsafe impl Send for HostBuffer<'_> {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer<'_> {}

impl HostBuffer<'_> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_host_buffer {
        self.handle
    }

    /// The memory.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes at `ptr`, valid until Drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The memory, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` bytes at `ptr`, valid until Drop, borrowed uniquely.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    /// Enqueues the asynchronous copy of `bytes` of `src` (at `src_offset`)
    /// into this host buffer at `offset` (copy_d2h_pinned).
    ///
    /// # Safety
    /// The device writes the memory after this returns: do not read or
    /// write it until a witness covering the copy is ready.
    pub unsafe fn copy_from_device(
        &self,
        offset: u64,
        src: &Buffer<'_>,
        src_offset: u64,
        bytes: u64,
    ) -> Result<()> {
        call!(
            self.rt.backend,
            copy_d2h_pinned(
                self.rt.handle,
                self.handle,
                offset,
                src.handle,
                src_offset,
                bytes
            )
        )
    }
}

impl HostBuffer<'_> {
    fn release(&mut self) -> Result<()> {
        if self.handle.bits == 0 {
            return Ok(());
        }
        let (b, rt, h) = (self.rt.backend, self.rt.handle, std::mem::take(&mut self.handle));
        if !self.registered {
            return call!(b, host_free(rt, h));
        }
        // The memory is the consumer's again once the borrow ends, so the
        // work using it must have completed by then: unregister, then wait.
        let r = call!(b, host_unregister(rt, h));
        r.and(self.rt.drain())
    }
}

impl Drop for HostBuffer<'_> {
    fn drop(&mut self) {
        let _ = self.release();
    }
}

/// An artifact loaded into one runtime; unloaded in Drop.
#[derive(Debug)]
pub struct Module<'r> {
    rt: &'r Runtime<'r>,
    handle: sys::t4a_module,
}

impl Module<'_> {
    /// The kernel `name` (`T4A_ENOTFOUND` when absent).
    pub fn function(&self, name: &str) -> Result<Function<'_>> {
        let cname = c_string(name, "function_get")?;
        let mut handle = sys::t4a_function::default();
        call!(
            self.rt.backend,
            function_get(self.rt.handle, self.handle, cname.as_ptr(), &mut handle)
        )?;
        Ok(Function {
            module: self,
            handle,
        })
    }
}

impl Drop for Module<'_> {
    fn drop(&mut self) {
        let _ = call!(self.rt.backend, module_unload(self.rt.handle, self.handle));
    }
}

/// A kernel of a module (no release of its own: valid while the module is).
#[derive(Debug)]
pub struct Function<'m> {
    module: &'m Module<'m>,
    handle: sys::t4a_function,
}

impl Function<'_> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_function {
        self.handle
    }

    /// The driver's attributes of the kernel.
    pub fn attributes(&self) -> Result<sys::t4a_function_attributes> {
        let mut a = sys::t4a_function_attributes::sized();
        let rt = self.module.rt;
        call!(
            rt.backend,
            function_attributes(rt.handle, self.handle, &mut a)
        )?;
        Ok(a)
    }

    /// Opts in to more than 48 KiB of dynamic shared memory.
    pub fn set_max_dynamic_shared(&self, bytes: u32) -> Result<()> {
        let rt = self.module.rt;
        call!(
            rt.backend,
            function_set_max_dynamic_shared(rt.handle, self.handle, bytes)
        )
    }
}

// The Send/Sync decisions of the crate docs, checked at compile time.
#[allow(dead_code)]
fn assert_threading() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Backend>();
    send_sync::<Runtime<'static>>();
    send_sync::<Buffer<'static>>();
    send_sync::<HostBuffer<'static>>();
    send_sync::<Witness<'static>>();
    send_sync::<Artifact<'static>>();
    send_sync::<Module<'static>>();
    send_sync::<Function<'static>>();
    send_sync::<Graph<'static>>();
    send_sync::<Capture<'static>>();
    send_sync::<Registered<'static, 'static>>();
    send_sync::<RegisteredReadOnly<'static, 'static>>();
    send_sync::<Imported<'static, 'static>>();
    send_sync::<DlTensor<'static>>();
    send_sync::<Stream<'static>>();
    send_sync::<Event<'static>>();
    send_sync::<Arg<'static>>();
    send_sync::<Error>();
    fn send<T: Send>() {}
    send::<Callback>();
    send::<ExternalMemory>();
}
