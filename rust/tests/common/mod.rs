//! What the integration tests share: opening a backend or skipping.
//!
//! A test that needs something absent (no libt4a_gpu plugin, no driver, no
//! device) skips: it prints why to stderr (past the test harness's capture)
//! and returns. Under tests/consumers/test_rust.sh, which sets
//! T4A_TEST_DRIVER (fake|real), nothing may be absent: it fails instead.
#![allow(dead_code)] // each test file uses part of it
use std::io::Write;
use t4a_gpu::Backend;

/// Whether a missing backend is a failure (make check) rather than a skip.
pub fn required() -> bool {
    std::env::var_os("T4A_TEST_DRIVER").is_some()
}

/// Prints why `test` is skipped, or panics when nothing may be missing.
pub fn skip(test: &str, why: &str) {
    if required() {
        panic!("{test}: {why} (T4A_TEST_DRIVER is set: nothing may be missing)");
    }
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
}

/// Prints why `test` skips a part the device or driver does not have (a
/// skip even where nothing may be missing: a GPU without peer access).
pub fn note(test: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "SKIP {test}: {why}");
}

/// The backend `name` (None: $T4A_GPU_BACKEND, else "cuda"), initialised
/// and with a device, or None after printing why not.
pub fn open(test: &str, name: Option<&str>) -> Option<Backend> {
    let b = match Backend::open(name) {
        Ok(b) => b,
        Err(e) => {
            skip(test, &format!("no backend ({e})"));
            return None;
        }
    };
    if let Err(e) = b.init() {
        skip(test, &format!("the backend cannot run here ({e})"));
        return None;
    }
    if name.is_none() {
        // The tests of the default backend are CUDA's (tests/host.rs has the
        // host backend's): another default is a skip, not a failure.
        match b.info() {
            Ok(i) if i.name == "cuda" => {}
            Ok(i) => {
                skip(test, &format!("the default backend is {:?}, not cuda", i.name));
                return None;
            }
            Err(e) => {
                skip(test, &format!("get_info failed ({e})"));
                return None;
            }
        }
    }
    match b.device_count() {
        Ok(n) if n > 0 => Some(b),
        Ok(_) => {
            skip(test, "the backend has no device");
            None
        }
        Err(e) => {
            skip(test, &format!("device_count failed ({e})"));
            None
        }
    }
}

/// On the fake CUDA driver: T4A_TEST_DRIVER=fake, or unset with the fake
/// loaded (its device names are then known exactly).
pub fn fake(b: &Backend) -> bool {
    match std::env::var("T4A_TEST_DRIVER") {
        Ok(d) => d == "fake",
        Err(_) => b.info().map_or(false, |i| i.driver_path.contains("fakecuda")),
    }
}

/// Deterministic bytes.
pub fn pattern(n: usize, seed: u32) -> Vec<u8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_103_515_245).wrapping_add(12345) & 0x7fff_ffff;
            (s >> 16) as u8
        })
        .collect()
}

/// `backend!("test")`: the default backend ([`open`]), or return from the
/// test after printing why it is skipped.
#[allow(unused_macros)]
macro_rules! backend {
    ($test:expr) => {
        match common::open($test, None) {
            Some(b) => b,
            None => return,
        }
    };
}

/// `needs_compiler!(b, "test")`: return from the test, after printing why,
/// when the backend's run-time compiler is unavailable (no NVRTC).
#[allow(unused_macros)]
macro_rules! needs_compiler {
    ($b:expr, $test:expr) => {
        match $b.compiler_info() {
            Ok(c) if c.status == t4a_gpu::Status::OK => {}
            Ok(c) => {
                common::skip($test, &format!("no run-time compiler ({})", c.reason));
                return;
            }
            Err(e) => {
                common::skip($test, &format!("compiler_info failed ({e})"));
                return;
            }
        }
    };
}
