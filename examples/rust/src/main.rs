//! examples/rust -- a complete t4a consumer in Rust, on the t4a-gpu crate.
//!
//! Flow: loader -> default backend -> init -> list devices -> runtime on
//! device 0 -> upload -> compile (NVRTC) -> load -> launch -> seal/wait ->
//! download -> verify against the CPU. Every object is released by Drop, in
//! the order the borrows force (buffers and modules before their runtime,
//! the runtime before the backend).
//!
//!     cargo run            # in examples/rust (cargo run -- --help: the usage)
//!
//! Exit status (as t4a-gpu's):
//!   0  the result was verified
//!   1  a wrong result, or a call that failed unexpectedly
//!   2  usage error
//!   3  no backend found (T4A_ENOBACKEND / T4A_EABI from t4a_gpu_open)
//!   4  a backend was found but is unusable here: init failed (no driver,
//!      no device, ...) or no run-time compiler is usable (NVRTC missing,
//!      or newer than the driver can load)
use std::process::ExitCode;
use std::time::Duration;
use t4a_gpu::{Arg, Backend, CompileOptions, Error, LaunchConfig, Status};

const N: usize = 1 << 20;
const ALPHA: f32 = 2.5;
const SOURCE: &str = r#"
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float alpha, const float *x, float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
"#;

/// A failure and the exit status it leads to.
struct Failure {
    what: &'static str,
    error: Option<Error>,
    detail: String,
    exit: u8,
}

impl Failure {
    fn new(what: &'static str, exit: u8) -> impl FnOnce(Error) -> Failure {
        move |e| Failure {
            what,
            error: Some(e),
            detail: String::new(),
            exit,
        }
    }
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::new("call failed", 1)(e)
    }
}

/// Deterministic floats in [-1, 1): a 64-bit LCG, 24 bits per value (exact in f32).
fn lcg_fill(seed: u64, out: &mut [f32]) {
    let mut state = seed;
    for v in out {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        *v = ((state >> 40) as f32) / (1u64 << 23) as f32 - 1.0;
    }
}

fn run() -> Result<String, Failure> {
    let backend = Backend::open(None).map_err(|e| match e.status {
        Status::ENOBACKEND | Status::EABI => Failure::new("backend not found", 3)(e),
        _ => Failure::from(e),
    })?;
    backend
        .init()
        .map_err(Failure::new("backend unusable here", 4))?;

    let info = backend.info()?;
    println!(
        "backend {} {} (ABI {}.{}), driver CUDA {}.{} from {}",
        info.name,
        info.version,
        info.abi.0,
        info.abi.1,
        info.driver_version / 1000,
        info.driver_version % 1000 / 10,
        info.driver_path
    );
    let devices = backend.devices()?;
    for d in &devices {
        println!(
            "device {}: {}, compute capability {}.{}, {:.1} GiB, {} SMs, PCI {}",
            d.ordinal,
            d.name,
            d.cc.0,
            d.cc.1,
            d.total_memory as f64 / (1u64 << 30) as f64,
            d.multiprocessors,
            d.pci_bus_id
        );
    }
    let device = devices.first().ok_or(Failure {
        what: "backend unusable here",
        error: None,
        detail: "no device after a successful init".into(),
        exit: 4,
    })?;

    let rt = backend.runtime(0)?;
    let mut x = vec![0f32; N];
    let mut y = vec![0f32; N];
    lcg_fill(0x7434_6121, &mut x);
    lcg_fill(0x5eed_0fa5, &mut y);
    let reference: Vec<f32> = x.iter().zip(&y).map(|(&a, &b)| ALPHA * a + b).collect();
    let (dx, dy) = (rt.alloc(4 * N as u64)?, rt.alloc(4 * N as u64)?);
    dx.write(0, &x)?;
    dy.write(0, &y)?;

    let options = CompileOptions {
        name: Some("t4a_axpy.cu".into()),
        ..Default::default()
    };
    let artifact = rt.compile(SOURCE, &options).map_err(|e| match e.status {
        // No NVRTC, or one whose output this driver cannot load.
        Status::ENOCOMPILER | Status::EUNSUPPORTED => {
            Failure::new("run-time compiler unavailable here", 4)(e)
        }
        _ => {
            if let Some(log) = &e.log {
                eprintln!("compile log:\n{log}");
            }
            Failure::from(e)
        }
    })?;
    let module = rt.load(&artifact)?;
    let axpy = module.function("t4a_axpy_f32")?;
    let block = 256u32;
    let grid = ((N as u32 + block - 1) / block).min(1024); // grid-stride covers the rest
    let args = [
        Arg::U64(N as u64),
        Arg::F32(ALPHA),
        (&dx).into(),
        (&dy).into(),
    ];
    rt.launch(&axpy, &LaunchConfig::linear(grid, block), &args)?;
    rt.seal()?.wait(Some(Duration::from_secs(120)))?;
    let mut out = vec![0f32; N];
    dy.read(0, &mut out)?;

    let bad: Vec<usize> = (0..N)
        .filter(|&i| (out[i] - reference[i]).abs() > 1e-6 * reference[i].abs() + 1e-6)
        .collect();
    if let Some(&first) = bad.first() {
        return Err(Failure {
            what: "wrong result",
            error: None,
            detail: format!(
                "{} of {N} results wrong; first at {first}: got {}, want {}",
                bad.len(),
                out[first],
                reference[first]
            ),
            exit: 1,
        });
    }
    Ok(device.name.clone())
}

const USAGE: &str = "usage: t4a-example [--help]
y = alpha * x + y on 1 Mi floats on device 0 of the default backend, checked against the CPU.
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
            "rust example: unexpected argument '{}'\n{USAGE}",
            args[args.len() - 1]
        );
        return ExitCode::from(2);
    }
    match run() {
        Ok(device) => {
            println!("rust example: axpy of {N} floats verified on {device}");
            ExitCode::SUCCESS
        }
        Err(f) => {
            match &f.error {
                Some(e) => eprintln!("rust example: {}: {e}", f.what),
                None => eprintln!("rust example: {}: {}", f.what, f.detail),
            }
            ExitCode::from(f.exit)
        }
    }
}
