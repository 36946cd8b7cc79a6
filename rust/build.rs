//! Links libt4a_gpu, the loader library, without any crate.
//!
//! Where it is: $T4A_GPU_LIB_DIR when set (the build tree's loader/.libs in
//! `make check`), else what `pkg-config --variable=libdir t4a-gpu` prints
//! (an installed t4a-gpu-backend), else only the linker's default
//! directories. The directory is also passed on to dependents' build
//! scripts as DEP_T4A_GPU_LIBDIR. Running the program needs the library on
//! the dynamic linker's path (installed, an rpath, or LD_LIBRARY_PATH).
use std::env;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=T4A_GPU_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-changed=build.rs");
    let dir = env::var("T4A_GPU_LIB_DIR")
        .ok()
        .filter(|d| !d.is_empty())
        .or_else(pkg_config_libdir);
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:libdir={dir}");
    }
    println!("cargo:rustc-link-lib=dylib=t4a_gpu");
}

/// `pkg-config --variable=libdir t4a-gpu`, or None when pkg-config or the
/// package is missing.
fn pkg_config_libdir() -> Option<String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(pkg_config)
        .args(["--variable=libdir", "t4a-gpu"])
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !dir.is_empty()).then(|| dir)
}
