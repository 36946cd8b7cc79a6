//! Links libt4a_gpu, the loader library, without any crate.
//!
//! Where it is: $T4A_GPU_LIB_DIR when set (the build tree's loader/.libs in
//! `make check`), else what `pkg-config --variable=libdir t4a-gpu` prints
//! (an installed t4a-gpu-backend), else the first of the usual library
//! directories holding libt4a_gpu.so, else only the linker's default
//! directories, with a cargo warning naming what was not found (the link
//! then fails unless the linker finds the library by itself). The
//! directory is passed on to dependents' build scripts as
//! DEP_T4A_GPU_LIBDIR, and baked into this package's own tests and
//! examples as an rpath so that `cargo test` runs them; other programs
//! need the library on the dynamic linker's path (installed, an rpath, or
//! LD_LIBRARY_PATH).
use std::env;
use std::path::Path;
use std::process::Command;

/// Where an installed libt4a_gpu usually is, after pkg-config.
const USUAL: &[&str] = &[
    "/usr/local/lib",
    "/usr/local/lib64",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
];

fn main() {
    println!("cargo:rerun-if-env-changed=T4A_GPU_LIB_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG");
    println!("cargo:rerun-if-changed=build.rs");
    let dir = match env::var("T4A_GPU_LIB_DIR").ok().filter(|d| !d.is_empty()) {
        Some(d) => {
            if !Path::new(&d).join("libt4a_gpu.so").exists() {
                println!("cargo:warning=T4A_GPU_LIB_DIR={d} holds no libt4a_gpu.so; the link will fail");
            }
            Some(d)
        }
        None => match pkg_config_libdir() {
            Ok(d) => Some(d),
            Err(why) => {
                let found = USUAL
                    .iter()
                    .find(|d| Path::new(d).join("libt4a_gpu.so").exists());
                if found.is_none() {
                    println!(
                        "cargo:warning=libt4a_gpu not found: {why}, and no libt4a_gpu.so in {}; \
                         install t4a-gpu-backend (make install), or set PKG_CONFIG_PATH to the \
                         directory of its t4a-gpu.pc, or T4A_GPU_LIB_DIR to the directory of \
                         libt4a_gpu.so",
                        USUAL.join(", ")
                    );
                }
                found.map(|d| d.to_string())
            }
        },
    };
    if let Some(dir) = dir {
        println!("cargo:rustc-link-search=native={dir}");
        println!("cargo:libdir={dir}");
        // This package's tests, examples and benches (not dependents).
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{dir}");
        println!("cargo:rustc-link-arg-examples=-Wl,-rpath,{dir}");
    }
    println!("cargo:rustc-link-lib=dylib=t4a_gpu");
}

/// `pkg-config --variable=libdir t4a-gpu`, or why it gave nothing.
fn pkg_config_libdir() -> Result<String, String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".into());
    let out = Command::new(&pkg_config)
        .args(["--variable=libdir", "t4a-gpu"])
        .output()
        .map_err(|e| format!("{pkg_config} cannot run ({e})"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !dir.is_empty() {
        Ok(dir)
    } else {
        Err(format!(
            "`{pkg_config} --variable=libdir t4a-gpu` found no t4a-gpu package"
        ))
    }
}
