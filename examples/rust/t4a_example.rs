//! examples/rust/t4a_example.rs -- a complete t4a consumer in Rust, with no
//! crates and no bindgen: the FFI below is written by hand from
//! <t4a/gpu_loader.h> and <t4a/gpu_backend_v1.h>.
//!
//! Flow: loader -> default backend -> init -> list devices -> runtime on
//! device 0 -> upload -> compile (NVRTC) -> load -> launch -> seal/wait ->
//! download -> verify against the CPU -> release everything.
//!
//! Build (the loader library is the only thing linked; no CUDA library is
//! needed at link time):
//!
//! ```sh
//! rustc --edition 2021 -O t4a_example.rs -L "$libdir" -l t4a_gpu \
//!       -C link-arg=-Wl,-rpath,"$libdir" -o t4a_example
//! ```
//!
//! Builds with Rust 1.63 (Debian 12's rustc) or newer, edition 2021: no
//! C-string literals (c"..."), no `offset_of!` (both 1.77), no
//! `std::ffi::c_int` aliases (1.64); field offsets are checked at run time.
//!
//! Exit status:
//!   0  the result was verified
//!   1  a wrong result, or a call that failed unexpectedly
//!   3  no backend found (T4A_ENOBACKEND / T4A_EABI from t4a_gpu_open)
//!   4  a backend was found but is unusable here: init failed (no driver,
//!      no device, ...) or no run-time compiler is usable (NVRTC missing,
//!      or newer than the driver can load)
//!
//! Every failure prints the call, the status name and the backend's
//! "<what failed>; <what to do>" detail.

// Unsafe operations need their own `unsafe` block even inside an unsafe fn
// (the edition 2024 rule); this also keeps rustc before 1.65 from calling
// those blocks unused.
#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::CStr;
use std::fmt;
use std::mem::size_of;
use std::os::raw::{c_char, c_int, c_void};
use std::process::ExitCode;
use std::ptr;

/// Hand-written mirror of the C ABI. Only the parts this program uses are
/// mirrored in full; the function table is mirrored slot by slot, in header
/// order, up to the last slot used (buffer_device_address). Reading a prefix
/// of the table is sound because the ABI only ever appends slots, and the
/// loader hands out a copy normalised to its own header size.
#[allow(non_camel_case_types, dead_code)]
mod ffi {
    use std::os::raw::{c_char, c_int, c_void};

    // Status codes used here (values are frozen by the ABI).
    pub const T4A_OK: c_int = 0;
    pub const T4A_ENODEVICE: c_int = -6;
    pub const T4A_ENOCOMPILER: c_int = -9;
    pub const T4A_ECOMPILE: c_int = -10;
    pub const T4A_EUNSUPPORTED: c_int = -14;
    pub const T4A_EABI: c_int = -15;
    pub const T4A_ENOBACKEND: c_int = -18;

    pub const T4A_WAIT_FOREVER: u64 = u64::MAX;

    /// Opaque `t4a_gpu_backend` of the loader (only ever behind a pointer).
    #[repr(C)]
    pub struct t4a_gpu_backend {
        _private: [u8; 0],
    }

    /// Structs of slots this program does not call: declared opaque so the
    /// slot signatures stay exact without mirroring every struct.
    macro_rules! opaque {
        ($($name:ident),*) => {$(
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*};
    }
    opaque!(
        t4a_compiler_info,
        t4a_runtime_options,
        t4a_runtime_counters,
        t4a_cache_stats,
        t4a_compile_cache_stats,
        t4a_function_attributes,
        t4a_raw_runtime
    );

    /// Handles: a 64-bit value in a struct; all-zero is the null handle.
    macro_rules! handles {
        ($($name:ident),*) => {$(
            #[repr(C)]
            #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
            pub struct $name {
                pub bits: u64,
            }
        )*};
    }
    handles!(
        t4a_runtime,
        t4a_buffer,
        t4a_host_buffer,
        t4a_witness,
        t4a_artifact,
        t4a_module,
        t4a_function
    );

    /// `t4a_artifact_kind` (a C enum; int-sized on every supported ABI).
    pub type t4a_artifact_kind = c_int;

    #[repr(C)]
    pub struct t4a_error_info {
        pub struct_size: u32,
        pub status: i32,
        pub native_code: i64,
        pub native_name: *const c_char,
        pub message: *const c_char,
    }

    #[repr(C)]
    pub struct t4a_backend_info {
        pub struct_size: u32,
        pub abi_major: u16,
        pub abi_minor: u16,
        pub name: [c_char; 32],
        pub version: [c_char; 32],
        pub driver_version: i32,
        pub device_count: i32,
        pub driver_path: [c_char; 256],
    }

    #[repr(C)]
    pub struct t4a_device_info {
        pub struct_size: u32,
        pub ordinal: i32,
        pub name: [c_char; 256],
        pub uuid: [u8; 16],
        pub cc_major: i32,
        pub cc_minor: i32,
        pub total_memory: u64,
        pub pci_bus_id: [c_char; 32],
        pub multiprocessors: i32,
        pub flags: u32,
        pub max_threads_per_block: i32,
        pub max_block_dim: [i32; 3],
        pub max_grid_dim: [i32; 3],
        pub max_shared_per_block: i32,
        pub max_shared_per_block_optin: i32,
        pub warp_size: i32,
    }

    #[repr(C)]
    pub struct t4a_compile_options {
        pub struct_size: u32,
        pub flags: u32,
        pub source: *const c_char,
        pub source_size: u64,
        pub name: *const c_char,
        pub options: *const *const c_char,
        pub option_count: u32,
        pub device_ordinal: i32,
    }

    #[repr(C)]
    pub struct t4a_launch_config {
        pub struct_size: u32,
        pub grid: [u32; 3],
        pub block: [u32; 3],
        pub shared_bytes: u32,
    }

    /// `t4a_gpu_backend_v1`, every slot from the start through
    /// buffer_device_address, in the header's order. A slot is a nullable C
    /// function pointer, hence `Option<unsafe extern "C" fn ...>`.
    #[repr(C)]
    pub struct t4a_gpu_backend_v1 {
        pub struct_size: u32,
        pub abi_major: u16,
        pub abi_minor: u16,
        pub name: *const c_char,
        pub version: *const c_char,
        // errors, backend
        pub last_error: Option<unsafe extern "C" fn(*mut t4a_error_info) -> c_int>,
        pub init: Option<unsafe extern "C" fn() -> c_int>,
        pub get_info: Option<unsafe extern "C" fn(*mut t4a_backend_info) -> c_int>,
        pub device_count: Option<unsafe extern "C" fn(*mut i32) -> c_int>,
        pub device_info: Option<unsafe extern "C" fn(i32, *mut t4a_device_info) -> c_int>,
        pub compiler_info: Option<unsafe extern "C" fn(*mut t4a_compiler_info) -> c_int>,
        pub peer_access_supported: Option<unsafe extern "C" fn(i32, i32, *mut bool) -> c_int>,
        // runtime
        pub runtime_create: Option<
            unsafe extern "C" fn(i32, *const t4a_runtime_options, *mut t4a_runtime) -> c_int,
        >,
        pub runtime_destroy: Option<unsafe extern "C" fn(t4a_runtime, u64) -> c_int>,
        pub runtime_counters:
            Option<unsafe extern "C" fn(t4a_runtime, *mut t4a_runtime_counters) -> c_int>,
        // device memory
        pub buffer_alloc: Option<unsafe extern "C" fn(t4a_runtime, u64, *mut t4a_buffer) -> c_int>,
        pub buffer_free: Option<unsafe extern "C" fn(t4a_runtime, t4a_buffer) -> c_int>,
        pub buffer_size: Option<unsafe extern "C" fn(t4a_runtime, t4a_buffer, *mut u64) -> c_int>,
        pub cache_trim: Option<unsafe extern "C" fn(t4a_runtime, u64) -> c_int>,
        pub cache_stats: Option<unsafe extern "C" fn(t4a_runtime, *mut t4a_cache_stats) -> c_int>,
        // pinned host memory
        pub host_alloc: Option<
            unsafe extern "C" fn(
                t4a_runtime,
                u64,
                u32,
                *mut t4a_host_buffer,
                *mut *mut c_void,
            ) -> c_int,
        >,
        pub host_free: Option<unsafe extern "C" fn(t4a_runtime, t4a_host_buffer) -> c_int>,
        // transfers
        pub copy_h2d_pinned: Option<
            unsafe extern "C" fn(t4a_runtime, t4a_buffer, u64, t4a_host_buffer, u64, u64) -> c_int,
        >,
        pub copy_d2h_pinned: Option<
            unsafe extern "C" fn(t4a_runtime, t4a_host_buffer, u64, t4a_buffer, u64, u64) -> c_int,
        >,
        pub copy_h2d:
            Option<unsafe extern "C" fn(t4a_runtime, t4a_buffer, u64, *const c_void, u64) -> c_int>,
        pub copy_d2h:
            Option<unsafe extern "C" fn(t4a_runtime, *mut c_void, t4a_buffer, u64, u64) -> c_int>,
        pub copy_d2d: Option<
            unsafe extern "C" fn(t4a_runtime, t4a_buffer, u64, t4a_buffer, u64, u64) -> c_int,
        >,
        pub copy_from_runtime: Option<
            unsafe extern "C" fn(
                t4a_runtime,
                t4a_buffer,
                u64,
                t4a_runtime,
                t4a_buffer,
                u64,
                u64,
            ) -> c_int,
        >,
        pub copy_from_peer: Option<
            unsafe extern "C" fn(
                t4a_runtime,
                t4a_buffer,
                u64,
                t4a_runtime,
                t4a_buffer,
                u64,
                u64,
            ) -> c_int,
        >,
        pub copy_from_peer_via_host: Option<
            unsafe extern "C" fn(
                t4a_runtime,
                t4a_buffer,
                u64,
                t4a_runtime,
                t4a_buffer,
                u64,
                u64,
            ) -> c_int,
        >,
        // completion
        pub seal: Option<unsafe extern "C" fn(t4a_runtime, *mut t4a_witness) -> c_int>,
        pub witness_query: Option<unsafe extern "C" fn(t4a_witness) -> c_int>,
        pub witness_wait: Option<unsafe extern "C" fn(t4a_witness, u64) -> c_int>,
        pub witness_retain: Option<unsafe extern "C" fn(t4a_witness) -> c_int>,
        pub witness_release: Option<unsafe extern "C" fn(t4a_witness) -> c_int>,
        pub runtime_wait_witness: Option<unsafe extern "C" fn(t4a_runtime, t4a_witness) -> c_int>,
        // code
        pub artifact_compile:
            Option<unsafe extern "C" fn(*const t4a_compile_options, *mut t4a_artifact) -> c_int>,
        pub artifact_from_bytes: Option<
            unsafe extern "C" fn(
                t4a_artifact_kind,
                *const c_void,
                u64,
                *const c_char,
                *mut t4a_artifact,
            ) -> c_int,
        >,
        pub artifact_log:
            Option<unsafe extern "C" fn(t4a_artifact, *mut *const c_char, *mut u64) -> c_int>,
        pub artifact_data: Option<
            unsafe extern "C" fn(
                t4a_artifact,
                *mut t4a_artifact_kind,
                *mut *const c_void,
                *mut u64,
            ) -> c_int,
        >,
        pub artifact_release: Option<unsafe extern "C" fn(t4a_artifact) -> c_int>,
        pub compile_cache_stats:
            Option<unsafe extern "C" fn(*mut t4a_compile_cache_stats) -> c_int>,
        pub compile_cache_clear: Option<unsafe extern "C" fn(u32) -> c_int>,
        pub module_load:
            Option<unsafe extern "C" fn(t4a_runtime, t4a_artifact, *mut t4a_module) -> c_int>,
        pub module_unload: Option<unsafe extern "C" fn(t4a_runtime, t4a_module) -> c_int>,
        pub function_get: Option<
            unsafe extern "C" fn(
                t4a_runtime,
                t4a_module,
                *const c_char,
                *mut t4a_function,
            ) -> c_int,
        >,
        pub function_attributes: Option<
            unsafe extern "C" fn(t4a_runtime, t4a_function, *mut t4a_function_attributes) -> c_int,
        >,
        pub function_set_max_dynamic_shared:
            Option<unsafe extern "C" fn(t4a_runtime, t4a_function, u32) -> c_int>,
        pub launch: Option<
            unsafe extern "C" fn(
                t4a_runtime,
                t4a_function,
                *const t4a_launch_config,
                *mut *mut c_void,
            ) -> c_int,
        >,
        // raw seam
        pub raw_runtime: Option<unsafe extern "C" fn(t4a_runtime, *mut t4a_raw_runtime) -> c_int>,
        pub buffer_device_address:
            Option<unsafe extern "C" fn(t4a_runtime, t4a_buffer, *mut u64) -> c_int>,
        // raw_function, raw_begin, raw_end follow in v1.0: not used here.
    }

    // The loader, libt4a_gpu (the only library linked).
    #[link(name = "t4a_gpu")]
    extern "C" {
        pub fn t4a_gpu_open(spec: *const c_char, out: *mut *mut t4a_gpu_backend) -> c_int;
        pub fn t4a_gpu_backend_table(backend: *const t4a_gpu_backend) -> *const t4a_gpu_backend_v1;
        pub fn t4a_gpu_close(backend: *mut t4a_gpu_backend) -> c_int;
        pub fn t4a_gpu_last_error() -> *const c_char;
        pub fn t4a_gpu_status_name(status: c_int) -> *const c_char;
    }
}

// Checks of the mirror against the C header. The numbers were printed by a
// C program compiled against <t4a/gpu_loader.h> on x86_64 Linux
// (sizeof/offsetof). Sizes are checked at compile time (a mismatch fails
// the build); field offsets at the start of main, before any FFI call (a
// mismatch exits 1 naming the field), because a const offset_of! needs
// Rust 1.77. Either way a wrong mirror never gets to corrupt memory.
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const _: () = {
    use ffi::*;

    assert!(size_of::<t4a_runtime>() == 8 && size_of::<t4a_buffer>() == 8);
    assert!(size_of::<t4a_witness>() == 8 && size_of::<t4a_artifact>() == 8);
    assert!(size_of::<t4a_module>() == 8 && size_of::<t4a_function>() == 8);
    assert!(size_of::<t4a_host_buffer>() == 8);
    assert!(size_of::<t4a_error_info>() == 32);
    assert!(size_of::<t4a_backend_info>() == 336);
    assert!(size_of::<t4a_device_info>() == 376);
    assert!(size_of::<t4a_compile_options>() == 48);
    assert!(size_of::<t4a_launch_config>() == 32);
    // The end of the mirrored table prefix: 392 =
    // offsetof(t4a_gpu_backend_v1, raw_function); the whole v1.0 table,
    // T4A_GPU_BACKEND_V1_0_SIZE, is 416.
    assert!(size_of::<t4a_gpu_backend_v1>() == 392);

    // Option<fn> must be a plain nullable pointer for the mirror to hold.
    assert!(size_of::<Option<unsafe extern "C" fn() -> c_int>>() == size_of::<*const c_void>());
};

/// The field offsets of the mirror that differ from the C header's, as
/// "struct.field: offset X here, Y in C" (empty when all match).
#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
fn layout_mismatches() -> Vec<String> {
    use ffi::*;
    use std::mem::MaybeUninit;

    // field_offset!(Struct, field): offset_of! at run time (Rust 1.63 has no
    // core::mem::offset_of!): the field's address minus the struct's, on an
    // uninitialised value. addr_of! takes the address without reading the
    // field or making a reference to uninitialised memory.
    macro_rules! field_offset {
        ($ty:ident, $field:ident) => {{
            let value = MaybeUninit::<$ty>::uninit();
            let base = value.as_ptr();
            // SAFETY: `base` points to a live (if uninitialised) $ty, so
            // the field projection is in bounds; nothing is read.
            let field = unsafe { ptr::addr_of!((*base).$field) };
            field as usize - base as usize
        }};
    }

    let mut bad = Vec::new();
    // offsets!(Struct { field = C offset, ... }): records each mismatch.
    macro_rules! offsets {
        ($ty:ident { $($field:ident = $offset:literal),* $(,)? }) => {$(
            let here = field_offset!($ty, $field);
            if here != $offset {
                bad.push(format!(
                    "{}.{}: offset {} here, {} in C",
                    stringify!($ty),
                    stringify!($field),
                    here,
                    $offset
                ));
            }
        )*};
    }

    offsets!(t4a_error_info {
        native_code = 8,
        native_name = 16,
        message = 24,
    });
    offsets!(t4a_backend_info {
        name = 8,
        version = 40,
        driver_version = 72,
        device_count = 76,
        driver_path = 80,
    });
    offsets!(t4a_device_info {
        name = 8,
        uuid = 264,
        cc_major = 280,
        total_memory = 288,
        pci_bus_id = 296,
        multiprocessors = 328,
        max_block_dim = 340,
        max_grid_dim = 352,
        warp_size = 372,
    });
    offsets!(t4a_compile_options {
        source = 8,
        source_size = 16,
        name = 24,
        options = 32,
        option_count = 40,
        device_ordinal = 44,
    });
    offsets!(t4a_launch_config {
        grid = 4,
        block = 16,
        shared_bytes = 28,
    });
    offsets!(t4a_gpu_backend_v1 {
        abi_major = 4,
        name = 8,
        version = 16,
        last_error = 24,
        init = 32,
        get_info = 40,
        device_count = 48,
        device_info = 56,
        compiler_info = 64,
        peer_access_supported = 72,
        runtime_create = 80,
        runtime_destroy = 88,
        runtime_counters = 96,
        buffer_alloc = 104,
        buffer_free = 112,
        buffer_size = 120,
        cache_trim = 128,
        cache_stats = 136,
        host_alloc = 144,
        host_free = 152,
        copy_h2d_pinned = 160,
        copy_d2h_pinned = 168,
        copy_h2d = 176,
        copy_d2h = 184,
        copy_d2d = 192,
        copy_from_runtime = 200,
        copy_from_peer = 208,
        copy_from_peer_via_host = 216,
        seal = 224,
        witness_query = 232,
        witness_wait = 240,
        witness_retain = 248,
        witness_release = 256,
        runtime_wait_witness = 264,
        artifact_compile = 272,
        artifact_from_bytes = 280,
        artifact_log = 288,
        artifact_data = 296,
        artifact_release = 304,
        compile_cache_stats = 312,
        compile_cache_clear = 320,
        module_load = 328,
        module_unload = 336,
        function_get = 344,
        function_attributes = 352,
        function_set_max_dynamic_shared = 360,
        launch = 368,
        raw_runtime = 376,
        buffer_device_address = 384,
    });
    bad
}

#[cfg(not(all(target_arch = "x86_64", target_os = "linux")))]
fn layout_mismatches() -> Vec<String> {
    Vec::new() // offsets recorded for x86_64 Linux only
}

/// `c_str!("text")`: a `&'static CStr` of a string literal, for Rust before
/// 1.77 (no c"text" literals). The NUL is appended here; from_bytes_with_nul
/// rejects an interior one.
macro_rules! c_str {
    ($text:literal) => {
        CStr::from_bytes_with_nul(concat!($text, "\0").as_bytes()).unwrap()
    };
}

/// The kernel, compiled at run time by NVRTC. Grid-stride, so any grid
/// covers any n.
fn axpy_source() -> &'static CStr {
    c_str!(r#"
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float alpha, const float *x, float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
"#)
}

fn kernel_name() -> &'static CStr {
    c_str!("t4a_axpy_f32")
}

const N: usize = 1 << 20;
const ALPHA: f32 = 2.5;

/// Exit statuses (see the top of the file).
const EXIT_WRONG: u8 = 1;
const EXIT_NO_BACKEND: u8 = 3;
const EXIT_UNUSABLE: u8 = 4;

/// A failed call: which one, its status, the backend's detail, and the exit
/// status it leads to.
#[derive(Debug)]
struct Failure {
    call: &'static str,
    status: c_int,
    detail: String,
    exit: u8,
}

impl Failure {
    /// A table slot the backend leaves NULL ("unsupported").
    fn missing_slot(slot: &'static str) -> Self {
        Failure {
            call: slot,
            status: ffi::T4A_EUNSUPPORTED,
            detail: "the backend leaves this slot NULL (unsupported)".into(),
            exit: EXIT_WRONG,
        }
    }

    /// Reclassifies the failure as "the backend cannot be used here" (exit 4).
    fn unusable(self) -> Self {
        Failure {
            exit: EXIT_UNUSABLE,
            ..self
        }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.status == ffi::T4A_OK {
            // Every call succeeded, but the result is wrong.
            return write!(f, "wrong result: {}: {}", self.call, self.detail);
        }
        let what = match self.exit {
            EXIT_NO_BACKEND => "backend not found",
            EXIT_UNUSABLE if self.call == "artifact_compile" => {
                "run-time compiler unavailable here"
            }
            EXIT_UNUSABLE => "backend unusable here",
            _ => "call failed",
        };
        write!(
            f,
            "{what}: {}: {}: {}",
            self.call,
            status_name(self.status),
            self.detail
        )
    }
}

/// Borrowed C string -> owned String ("" for NULL).
///
/// # Safety
/// `p` is NULL or a NUL-terminated string valid for the call.
unsafe fn c_string(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        // SAFETY: as the caller promises.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// A fixed-size, NUL-padded char array of an info struct -> String.
fn c_chars(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn status_name(status: c_int) -> String {
    // SAFETY: the loader returns a static string for any value.
    unsafe { c_string(ffi::t4a_gpu_status_name(status)) }
}

/// Size of a struct as its `struct_size` field wants it.
fn struct_size<T>() -> u32 {
    u32::try_from(size_of::<T>()).expect("struct size fits u32")
}

/// An open backend: the loader's handle and its function table. The table
/// is valid while the backend is open, so it is only lent out by reference.
struct Backend {
    handle: *mut ffi::t4a_gpu_backend,
    table: *const ffi::t4a_gpu_backend_v1,
}

/// Calls a table slot, turning a NULL slot or a non-OK status into a
/// Failure named after the slot.
macro_rules! call {
    ($be:expr, $slot:ident ( $($arg:expr),* $(,)? )) => {{
        let be: &Backend = $be;
        match be.table().$slot {
            None => Err(Failure::missing_slot(stringify!($slot))),
            // SAFETY: the slot comes from the backend's table, with the
            // signature of the header; the arguments are valid for the call
            // (each call site passes live handles and in-bounds pointers).
            Some(f) => be.check(unsafe { f($($arg),*) }, stringify!($slot)),
        }
    }};
}

impl Backend {
    /// Opens the default backend ($T4A_GPU_BACKEND, else "cuda").
    fn open_default() -> Result<Backend, Failure> {
        let mut handle = ptr::null_mut();
        // SAFETY: NULL spec is "the default"; `handle` receives the backend.
        let status = unsafe { ffi::t4a_gpu_open(ptr::null(), &mut handle) };
        if status != ffi::T4A_OK {
            let exit = match status {
                ffi::T4A_ENOBACKEND | ffi::T4A_EABI => EXIT_NO_BACKEND,
                _ => EXIT_WRONG,
            };
            // SAFETY: a static per-thread string of the loader.
            let detail = unsafe { c_string(ffi::t4a_gpu_last_error()) };
            return Err(Failure {
                call: "t4a_gpu_open",
                status,
                detail,
                exit,
            });
        }
        // SAFETY: `handle` is open; the table lives until t4a_gpu_close.
        let table = unsafe { ffi::t4a_gpu_backend_table(handle) };
        let backend = Backend { handle, table };
        if table.is_null() {
            return Err(Failure {
                call: "t4a_gpu_backend_table",
                status: ffi::T4A_EUNSUPPORTED,
                detail: "the loader returned no table".into(),
                exit: EXIT_WRONG,
            });
        }
        Ok(backend)
    }

    fn table(&self) -> &ffi::t4a_gpu_backend_v1 {
        // SAFETY: non-null (checked in open_default) and valid until close,
        // which needs `self` by value.
        unsafe { &*self.table }
    }

    /// T4A_OK -> Ok; otherwise a Failure carrying the backend's last_error
    /// detail (with the native driver/compiler code when there is one).
    fn check(&self, status: c_int, call: &'static str) -> Result<(), Failure> {
        if status == ffi::T4A_OK {
            return Ok(());
        }
        let mut info = ffi::t4a_error_info {
            struct_size: struct_size::<ffi::t4a_error_info>(),
            status: 0,
            native_code: 0,
            native_name: ptr::null(),
            message: ptr::null(),
        };
        let mut detail = String::from("(no detail)");
        if let Some(last_error) = self.table().last_error {
            // SAFETY: a required slot; `info` is a valid t4a_error_info and
            // its strings stay valid until this thread's next backend call,
            // so they are copied at once.
            if unsafe { last_error(&mut info) } == ffi::T4A_OK {
                detail = unsafe { c_string(info.message) };
                let native = unsafe { c_string(info.native_name) };
                // The plugin's message usually names it already.
                if !native.is_empty() && !detail.contains(&native) {
                    detail = format!("{detail} [{native} = {}]", info.native_code);
                }
            }
        }
        Err(Failure {
            call,
            status,
            detail,
            exit: EXIT_WRONG,
        })
    }

    /// Drops the reference explicitly, with its status checked.
    fn close(self) -> Result<(), Failure> {
        let handle = self.handle;
        // The reference is dropped by the call below, not by Drop.
        std::mem::forget(self);
        // SAFETY: `handle` came from t4a_gpu_open and is closed once.
        let status = unsafe { ffi::t4a_gpu_close(handle) };
        if status == ffi::T4A_OK {
            return Ok(());
        }
        // SAFETY: a static per-thread string of the loader.
        let detail = unsafe { c_string(ffi::t4a_gpu_last_error()) };
        Err(Failure {
            call: "t4a_gpu_close",
            status,
            detail,
            exit: EXIT_WRONG,
        })
    }
}

impl Drop for Backend {
    /// Early-error path only: best effort, the status has nowhere to go.
    fn drop(&mut self) {
        // SAFETY: `handle` came from t4a_gpu_open and is closed once.
        unsafe { ffi::t4a_gpu_close(self.handle) };
    }
}

/// An owned backend object (runtime, buffer, artifact, ...) with the call
/// that releases it. `release()` releases it with the status checked; if an
/// error returns early instead, Drop releases it best effort. Guards drop in
/// reverse order of creation, which is the order the objects need (buffers
/// before their runtime, and so on).
struct Owned<'b, H: Copy> {
    backend: &'b Backend,
    handle: H,
    call: &'static str,
    release_fn: fn(&Backend, H) -> c_int,
    live: bool,
}

impl<'b, H: Copy> Owned<'b, H> {
    fn new(
        backend: &'b Backend,
        handle: H,
        call: &'static str,
        release_fn: fn(&Backend, H) -> c_int,
    ) -> Self {
        Owned {
            backend,
            handle,
            call,
            release_fn,
            live: true,
        }
    }

    fn get(&self) -> H {
        self.handle
    }

    fn release(mut self) -> Result<(), Failure> {
        self.live = false;
        self.backend
            .check((self.release_fn)(self.backend, self.handle), self.call)
    }
}

impl<H: Copy> Drop for Owned<'_, H> {
    fn drop(&mut self) {
        if self.live {
            (self.release_fn)(self.backend, self.handle);
        }
    }
}

// Release functions for Owned: the slot's status, or T4A_EUNSUPPORTED when
// the slot is NULL. SAFETY (each `unsafe` below): the slot has the header's
// signature, and Owned passes a handle this backend produced, exactly once.
fn destroy_runtime(be: &Backend, rt: ffi::t4a_runtime) -> c_int {
    be.table()
        .runtime_destroy
        .map_or(ffi::T4A_EUNSUPPORTED, |f| unsafe {
            f(rt, ffi::T4A_WAIT_FOREVER)
        })
}
fn release_artifact(be: &Backend, a: ffi::t4a_artifact) -> c_int {
    be.table()
        .artifact_release
        .map_or(ffi::T4A_EUNSUPPORTED, |f| unsafe { f(a) })
}
fn release_witness(be: &Backend, w: ffi::t4a_witness) -> c_int {
    be.table()
        .witness_release
        .map_or(ffi::T4A_EUNSUPPORTED, |f| unsafe { f(w) })
}
fn free_buffer(be: &Backend, (rt, b): (ffi::t4a_runtime, ffi::t4a_buffer)) -> c_int {
    be.table()
        .buffer_free
        .map_or(ffi::T4A_EUNSUPPORTED, |f| unsafe { f(rt, b) })
}
fn unload_module(be: &Backend, (rt, m): (ffi::t4a_runtime, ffi::t4a_module)) -> c_int {
    be.table()
        .module_unload
        .map_or(ffi::T4A_EUNSUPPORTED, |f| unsafe { f(rt, m) })
}

/// Deterministic pseudo-random floats in [-1, 1): a 64-bit LCG (Knuth's
/// MMIX constants), top 24 bits -> an exactly representable f32.
fn lcg_fill(seed: u64, out: &mut [f32]) {
    let mut state = seed;
    for v in out {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *v = ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0;
    }
}

/// Prints the backend and its devices.
fn list_devices(be: &Backend) -> Result<i32, Failure> {
    let mut info = ffi::t4a_backend_info {
        struct_size: struct_size::<ffi::t4a_backend_info>(),
        abi_major: 0,
        abi_minor: 0,
        name: [0; 32],
        version: [0; 32],
        driver_version: 0,
        device_count: 0,
        driver_path: [0; 256],
    };
    call!(be, get_info(&mut info))?;
    println!(
        "backend {} {} (ABI {}.{}), driver CUDA {}.{} from {}",
        c_chars(&info.name),
        c_chars(&info.version),
        info.abi_major,
        info.abi_minor,
        info.driver_version / 1000,
        info.driver_version % 1000 / 10,
        c_chars(&info.driver_path)
    );

    let mut count = 0i32;
    call!(be, device_count(&mut count))?;
    for ordinal in 0..count {
        // SAFETY: all-zero is a valid t4a_device_info (integers and arrays).
        let mut dev: ffi::t4a_device_info = unsafe { std::mem::zeroed() };
        dev.struct_size = struct_size::<ffi::t4a_device_info>();
        call!(be, device_info(ordinal, &mut dev))?;
        println!(
            "device {ordinal}: {}, compute capability {}.{}, {:.1} GiB, {} SMs, PCI {}",
            c_chars(&dev.name),
            dev.cc_major,
            dev.cc_minor,
            dev.total_memory as f64 / (1u64 << 30) as f64,
            dev.multiprocessors,
            c_chars(&dev.pci_bus_id)
        );
    }
    Ok(count)
}

/// Compiles the kernel for device 0. A missing or unusable NVRTC makes the
/// backend unusable *here* (exit 4), like a missing driver; a compile error
/// prints the compiler's log (exit 1).
fn compile_axpy(be: &Backend) -> Result<Owned<'_, ffi::t4a_artifact>, Failure> {
    let opts = ffi::t4a_compile_options {
        struct_size: struct_size::<ffi::t4a_compile_options>(),
        flags: 0,
        source: axpy_source().as_ptr(),
        source_size: 0, // NUL-terminated
        name: c_str!("t4a_axpy.cu").as_ptr(),
        options: ptr::null(),
        option_count: 0,
        device_ordinal: 0, // the architecture of device 0
    };
    let mut artifact = ffi::t4a_artifact::default();
    match call!(be, artifact_compile(&opts, &mut artifact)) {
        Ok(()) => Ok(Owned::new(
            be,
            artifact,
            "artifact_release",
            release_artifact,
        )),
        // No NVRTC, or one whose output this driver cannot load (the only
        // T4A_EUNSUPPORTED of artifact_compile): no compiler usable here.
        Err(f) if f.status == ffi::T4A_ENOCOMPILER || f.status == ffi::T4A_EUNSUPPORTED => {
            Err(f.unusable())
        }
        Err(f) => {
            // On T4A_ECOMPILE the artifact exists so its log can be read.
            if f.status == ffi::T4A_ECOMPILE && artifact.bits != 0 {
                let owned = Owned::new(be, artifact, "artifact_release", release_artifact);
                let (mut log, mut len) = (ptr::null(), 0u64);
                if call!(be, artifact_log(owned.get(), &mut log, &mut len)).is_ok() {
                    // SAFETY: NUL-terminated, valid until the release below.
                    eprintln!("compile log:\n{}", unsafe { c_string(log) });
                }
                owned.release()?;
            }
            Err(f)
        }
    }
}

/// The whole flow; returns the device name on success.
fn run() -> Result<String, Failure> {
    let be = Backend::open_default()?;
    // init loads the driver: any failure here means "no usable GPU here".
    call!(&be, init()).map_err(Failure::unusable)?;

    if list_devices(&be)? < 1 {
        return Err(Failure {
            call: "device_count",
            status: ffi::T4A_ENODEVICE,
            detail: "no devices after a successful init".into(),
            exit: EXIT_UNUSABLE,
        });
    }
    // SAFETY: all-zero is a valid t4a_device_info.
    let mut dev: ffi::t4a_device_info = unsafe { std::mem::zeroed() };
    dev.struct_size = struct_size::<ffi::t4a_device_info>();
    call!(&be, device_info(0, &mut dev))?;
    let device_name = c_chars(&dev.name);

    // One runtime on device 0 (default options).
    let mut rt_handle = ffi::t4a_runtime::default();
    call!(&be, runtime_create(0, ptr::null(), &mut rt_handle))?;
    let rt = Owned::new(&be, rt_handle, "runtime_destroy", destroy_runtime);
    let rt_h = rt.get();

    // Inputs, and the CPU reference computed the same way (f32 throughout).
    let mut x = vec![0f32; N];
    let mut y = vec![0f32; N];
    lcg_fill(0x7434_6121, &mut x);
    lcg_fill(0x5eed_0fa5, &mut y);
    let reference: Vec<f32> = x.iter().zip(&y).map(|(&xi, &yi)| ALPHA * xi + yi).collect();

    let bytes = (N * size_of::<f32>()) as u64;
    let mut handle = ffi::t4a_buffer::default();
    call!(&be, buffer_alloc(rt_h, bytes, &mut handle))?;
    let dx = Owned::new(&be, (rt_h, handle), "buffer_free", free_buffer);
    call!(&be, buffer_alloc(rt_h, bytes, &mut handle))?;
    let dy = Owned::new(&be, (rt_h, handle), "buffer_free", free_buffer);
    // Pageable uploads: they return once the host memory was consumed.
    call!(&be, copy_h2d(rt_h, dx.get().1, 0, x.as_ptr().cast(), bytes))?;
    call!(&be, copy_h2d(rt_h, dy.get().1, 0, y.as_ptr().cast(), bytes))?;

    let artifact = compile_axpy(&be)?;
    let mut module_handle = ffi::t4a_module::default();
    call!(&be, module_load(rt_h, artifact.get(), &mut module_handle))?;
    let module = Owned::new(&be, (rt_h, module_handle), "module_unload", unload_module);
    let mut func = ffi::t4a_function::default();
    call!(
        &be,
        function_get(rt_h, module.get().1, kernel_name().as_ptr(), &mut func)
    )?;

    // Kernel arguments as cuLaunchKernel takes them: pointers to each value;
    // a buffer argument is (a pointer to) its 64-bit device address.
    let mut n = N as u64;
    let mut alpha = ALPHA;
    let (mut x_addr, mut y_addr) = (0u64, 0u64);
    call!(&be, buffer_device_address(rt_h, dx.get().1, &mut x_addr))?;
    call!(&be, buffer_device_address(rt_h, dy.get().1, &mut y_addr))?;
    let mut args: [*mut c_void; 4] = [
        ptr::addr_of_mut!(n).cast(),
        ptr::addr_of_mut!(alpha).cast(),
        ptr::addr_of_mut!(x_addr).cast(),
        ptr::addr_of_mut!(y_addr).cast(),
    ];
    let block = 256u32;
    let grid = ((N as u32 + block - 1) / block).min(1024); // grid-stride covers the rest
    let cfg = ffi::t4a_launch_config {
        struct_size: struct_size::<ffi::t4a_launch_config>(),
        grid: [grid, 1, 1],
        block: [block, 1, 1],
        shared_bytes: 0,
    };
    call!(&be, launch(rt_h, func, &cfg, args.as_mut_ptr()))?;

    // Completion: a witness covering the launch, waited on from the host.
    let mut witness_handle = ffi::t4a_witness::default();
    call!(&be, seal(rt_h, &mut witness_handle))?;
    let witness = Owned::new(&be, witness_handle, "witness_release", release_witness);
    call!(&be, witness_wait(witness.get(), ffi::T4A_WAIT_FOREVER))?;

    let mut out = vec![0f32; N];
    call!(
        &be,
        copy_d2h(rt_h, out.as_mut_ptr().cast(), dy.get().1, 0, bytes)
    )?;

    // Release in dependency order, every status checked.
    witness.release()?;
    module.release()?;
    dy.release()?;
    dx.release()?;
    artifact.release()?;
    rt.release()?;
    be.close()?;

    // Verify: |err| <= 1e-6 * |ref| + 1e-6 (the GPU may fuse into an FMA).
    let bad: Vec<usize> = (0..N)
        .filter(|&i| (out[i] - reference[i]).abs() > 1e-6 * reference[i].abs() + 1e-6)
        .collect();
    if let Some(&first) = bad.first() {
        return Err(Failure {
            call: "verify",
            status: ffi::T4A_OK,
            detail: format!(
                "{} of {N} results wrong; first at {first}: got {}, want {}",
                bad.len(),
                out[first],
                reference[first]
            ),
            exit: EXIT_WRONG,
        });
    }
    Ok(device_name)
}

fn main() -> ExitCode {
    let mismatches = layout_mismatches();
    if !mismatches.is_empty() {
        for m in &mismatches {
            eprintln!("rust example: FFI mirror out of date: {m}");
        }
        return ExitCode::from(EXIT_WRONG);
    }
    match run() {
        Ok(device) => {
            println!("rust example: axpy of {N} floats verified on {device}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprintln!("rust example: {failure}");
            ExitCode::from(failure.exit)
        }
    }
}
