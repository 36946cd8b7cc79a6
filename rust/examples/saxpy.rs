//! examples/saxpy.rs -- examples/saxpy.c through the safe Rust layer:
//! loader -> backend -> runtime -> compile -> upload -> launch -> download
//! -> verify against the CPU.
//!
//!     cargo run --example saxpy [-- --help]
//!
//! Exit status, as t4a-gpu's: 0 verified, 1 a call failed or the result is
//! wrong, 2 usage error, 3 no backend found, 4 the backend cannot be used
//! here (no driver, no GPU, no compiler).
use std::process::ExitCode;
use t4a_gpu::{Arg, Backend, CompileOptions, LaunchConfig};

const SOURCE: &str = r#"
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float a, const float *x, float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
       i < n; i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = a * x[i] + y[i];
}
"#;

fn run() -> Result<u64, t4a_gpu::Error> {
    let backend = Backend::open(None)?;
    backend.init()?;
    let rt = backend.runtime(0)?;
    let code = rt.compile(
        SOURCE,
        &CompileOptions {
            name: Some("saxpy.cu".into()),
            ..Default::default()
        },
    )?;
    let module = rt.load(&code)?;
    let saxpy = module.function("t4a_axpy_f32")?;
    drop(code);

    let n = 1usize << 20;
    let a = 2.5f32;
    let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 / 1000.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();
    let (dx, dy) = (rt.alloc(4 * n as u64)?, rt.alloc(4 * n as u64)?);
    dx.write(0, &x)?;
    dy.write(0, &y)?;
    let args = [Arg::U64(n as u64), Arg::F32(a), (&dx).into(), (&dy).into()];
    rt.launch(&saxpy, &LaunchConfig::linear(256, 256), &args)?;

    let mut out = vec![0f32; n];
    dy.read(0, &mut out)?; // waits for the launch
    let bad = (0..n)
        .filter(|&i| {
            let want = a as f64 * x[i] as f64 + y[i] as f64;
            (out[i] as f64 - want).abs() > 1e-5 * (want.abs() + 1.0)
        })
        .count();
    println!("saxpy: {n} elements, {bad} wrong");
    Ok(bad as u64)
}

const USAGE: &str = "usage: saxpy [--help]
y = 2.5 * x + y on 1 Mi floats, compiled with NVRTC and run on device 0 of the default
backend ($T4A_GPU_BACKEND, else cuda), checked against the CPU.
exit status: 0 verified, 1 a call failed or the result is wrong, 2 usage error,
             3 no backend found, 4 the backend cannot be used here (reason printed)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.is_empty() {
        if args.len() == 1 && (args[0] == "--help" || args[0] == "-h") {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        eprintln!(
            "saxpy: unexpected argument '{}'\n{USAGE}",
            args[args.len() - 1]
        );
        return ExitCode::from(2);
    }
    match run() {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        Err(e) => {
            eprintln!("saxpy: {e}");
            use t4a_gpu::sys::*;
            ExitCode::from(match e.code() {
                T4A_ENOBACKEND | T4A_EABI => 3,
                T4A_ENODRIVER | T4A_ESTUBDRIVER | T4A_ENODEVICE | T4A_EDRIVEROLD
                | T4A_EDRIVERMISMATCH | T4A_ENOCOMPILER => 4,
                _ => 1,
            })
        }
    }
}
