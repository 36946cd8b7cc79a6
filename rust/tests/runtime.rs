//! The safe layer against a backend: the fake CUDA driver and fake NVRTC in
//! `make check`, the real driver on the GPU lane (tests/consumers/test_rust.sh
//! sets the environment; T4A_TEST_DRIVER=fake|real says which). Data is
//! checked bit for bit, statuses exactly. Without a backend that can run
//! (no driver, no device) each test skips, saying why (tests/common).
use std::thread;
use std::time::Duration;

#[macro_use]
mod common;

use common::pattern;
use t4a_gpu::{sys, Arg, Backend, CompileOptions, LaunchConfig, Status};

const SOURCE: &str = r#"
extern "C" __global__ void t4a_axpy_f32(unsigned long long n, float alpha, const float *x,
                                        float *y) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    y[i] = alpha * x[i] + y[i];
}
extern "C" __global__ void t4a_fill_u32(unsigned int *p, unsigned int value,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    p[i] = value;
}
"#;

#[test]
fn statuses_match_the_loader() {
    for &(name, code, message) in sys::STATUSES {
        let s = Status::from_code(code);
        assert_eq!((s.code(), s.name(), s.message()), (code, name, message));
        // SAFETY: static strings of the loader.
        let (n, m) = unsafe {
            (
                std::ffi::CStr::from_ptr(sys::t4a_gpu_status_name(code)),
                std::ffi::CStr::from_ptr(sys::t4a_gpu_status_message(code)),
            )
        };
        assert_eq!((n.to_str().unwrap(), m.to_str().unwrap()), (name, message));
    }
    assert_eq!(Status::from_code(-999), Status::Unknown(-999));
    assert_eq!(Status::Unknown(-999).name(), "T4A_UNKNOWN");
    assert_eq!(sys::STATUSES.len(), 25);
}

#[test]
fn loader_and_backend_facts() {
    assert_eq!(t4a_gpu::loader_version(), (0, 1, 0));
    assert_eq!(
        t4a_gpu::loader_abi(),
        (
            sys::T4A_GPU_BACKEND_ABI_MAJOR,
            sys::T4A_GPU_BACKEND_ABI_MINOR
        )
    );
    let names: Vec<String> = t4a_gpu::list_backends()
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    let e = Backend::open(Some("no_such_backend")).unwrap_err();
    assert_eq!(e.status, Status::ENOBACKEND);
    assert!(e.message.contains("libt4a_no_such_backend.so"), "{e}");
    assert_eq!(
        Backend::open_path("/nonexistent/libt4a_x.so")
            .unwrap_err()
            .status,
        Status::ENOBACKEND
    );

    let b = backend!("loader_and_backend_facts");
    let again = Backend::open_path(b.path()).unwrap(); // the same plugin, counted twice
    let minor = t4a_gpu::sys::T4A_GPU_BACKEND_ABI_MINOR as u16;
    assert_eq!(again.abi(), (1, minor));
    drop(again);
    let info = b.info().unwrap();
    assert_eq!((info.name.as_str(), info.abi), ("cuda", (1, minor)));
    assert!(names.contains(&info.name), "{names:?}");
    let devices = b.devices().unwrap();
    assert_eq!(devices.len() as i32, info.device_count);
    if common::fake(&b) {
        let names: Vec<&str> = devices.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(names, ["Fake GPU 0", "Fake GPU 1"]);
        assert_eq!(devices[0].cc, (9, 0));
    }
    for d in &devices {
        assert!(d.total_memory > 0);
        assert_eq!(d.raw.warp_size, 32);
    }
    if common::required() {
        assert_eq!(b.compiler_info().unwrap().status, Status::OK);
    }
    let e = b.device(devices.len() as i32).unwrap_err();
    assert_eq!(e.status, Status::EINVAL);
    assert_eq!(e.call, "device_info");
    assert!(!e.message.is_empty());
    assert!(b.table().launch.is_some());
}

#[test]
fn memory_round_trips_and_errors() {
    let b = backend!("memory_round_trips_and_errors");
    let rt = b.runtime(0).unwrap();
    let data = pattern(4096, 1);
    let buf = rt.alloc(4096).unwrap();
    buf.write(0, &data).unwrap();
    let mut back = vec![0u8; 4096];
    buf.read(0, &mut back).unwrap();
    assert!(back == data, "the data differs");

    let floats: Vec<f32> = (0..1000).map(|i| i as f32 * 0.25 - 7.0).collect();
    let fb = rt.alloc(4000).unwrap();
    fb.write(0, &floats).unwrap();
    let mut fback = vec![0f32; 1000];
    fb.read(0, &mut fback).unwrap();
    assert_eq!(
        fback.iter().map(|f| f.to_bits()).collect::<Vec<_>>(),
        floats.iter().map(|f| f.to_bits()).collect::<Vec<_>>()
    );
    buf.write(100, &[0xffu8; 8]).unwrap();
    let mut window = [0u8; 12];
    buf.read(98, &mut window).unwrap();
    assert_eq!(&window[..2], &data[98..100]);
    assert_eq!(&window[2..10], &[0xff; 8]);
    assert_eq!(&window[10..], &data[108..110]);

    let e = buf.read(4090, &mut [0u8; 8]).unwrap_err();
    assert_eq!(e.status, Status::ERANGE);
    assert_eq!(e.code(), sys::T4A_ERANGE);
    assert!(e.message.contains("exceeds"), "{e}");
    assert!(
        e.to_string().starts_with("copy_d2h: T4A_ERANGE (-20): "),
        "{e}"
    );
    assert_eq!(buf.write(4096, &[1u8]).unwrap_err().status, Status::ERANGE);

    // Copies within the runtime, from another runtime, through the host.
    let other_rt = b.runtime(0).unwrap();
    let copy = other_rt.alloc(4096).unwrap();
    copy.copy_from(0, &buf, 0, 4096).unwrap();
    let mut got = vec![0u8; 4096];
    copy.read(0, &mut got).unwrap();
    buf.read(0, &mut back).unwrap();
    assert_eq!(got, back);
    let d2d = rt.alloc(64).unwrap();
    d2d.copy_from(0, &buf, 1000, 64).unwrap();
    let mut small = [0u8; 64];
    d2d.read(0, &mut small).unwrap();
    assert_eq!(&small[..], &data[1000..1064]);
    copy.copy_from_via_host(0, &d2d, 0, 64).unwrap();
    copy.read(0, &mut small).unwrap();
    assert_eq!(&small[..], &data[1000..1064]);
    assert_eq!(rt.counters().unwrap().copies_d2d, 1);
    assert_eq!(other_rt.counters().unwrap().copies_cross_runtime, 1);
}

#[test]
fn peer_copy() {
    let b = backend!("peer_copy");
    if b.device_count().unwrap() < 2 || !b.peer_access_supported(1, 0).unwrap() {
        common::note("peer_copy", "fewer than two devices with peer access");
        return;
    }
    let (r0, r1) = (b.runtime(0).unwrap(), b.runtime(1).unwrap());
    let data = pattern(3000, 7);
    let src = r0.alloc(3000).unwrap();
    src.write(0, &data).unwrap();
    let dst = r1.alloc(3000).unwrap();
    dst.copy_from(0, &src, 0, 3000).unwrap();
    let mut got = vec![0u8; 3000];
    dst.read(0, &mut got).unwrap();
    assert!(got == data, "the data differs");
    assert_eq!(r1.counters().unwrap().copies_peer, 1);
}

#[test]
fn pinned_copies() {
    let b = backend!("pinned_copies");
    let rt = b.runtime(0).unwrap();
    let n = 1 << 16;
    let data = pattern(n, 3);
    let mut src = rt.host_alloc(n as u64, false).unwrap();
    src.as_mut_slice().copy_from_slice(&data);
    let dst = rt.host_alloc(n as u64, false).unwrap();
    let buf = rt.alloc(n as u64).unwrap();
    // SAFETY: neither host buffer is touched until the witness is ready.
    unsafe {
        buf.copy_from_pinned(0, &src, 0, n as u64).unwrap();
        dst.copy_from_device(0, &buf, 0, n as u64).unwrap();
    }
    let w = rt.seal().unwrap();
    w.wait(Some(Duration::from_secs(60))).unwrap();
    assert!(w.query().unwrap());
    assert_eq!(dst.as_slice(), &data[..]);
    let c = rt.counters().unwrap();
    assert_eq!(
        (
            c.copies_h2d_pinned,
            c.copies_d2h_pinned,
            c.live_host_buffers
        ),
        (1, 1, 2)
    );
}

#[test]
fn every_object_is_released_exactly_once() {
    let b = backend!("every_object_is_released_exactly_once");
    let rt = b.runtime(0).unwrap();
    {
        let _a = rt.alloc(64).unwrap();
        let _b = rt.alloc(64).unwrap();
        let _h = rt.host_alloc(64, false).unwrap();
        let c = rt.counters().unwrap();
        assert_eq!((c.live_buffers, c.live_host_buffers), (2, 1));
    }
    let c = rt.counters().unwrap();
    assert_eq!((c.live_buffers, c.live_host_buffers), (0, 0));

    // A witness outlives its runtime.
    let w = {
        let rt2 = b.runtime(0).unwrap();
        let buf = rt2.alloc(1 << 20).unwrap();
        buf.write(0, &vec![1u8; 1 << 20]).unwrap();
        rt2.seal().unwrap()
    };
    w.wait(None).unwrap();
    let w2 = w.try_clone().unwrap();
    drop(w);
    assert!(w2.query().unwrap());

    // close() reports the status; afterwards Drop does nothing.
    let rt3 = b.runtime(0).unwrap();
    rt3.close(None).map_err(|(e, _)| e).unwrap();
}

#[test]
fn kernels_compile_launch_and_verify_bit_exact() {
    let b = backend!("kernels_compile_launch_and_verify_bit_exact");
    needs_compiler!(b, "kernels_compile_launch_and_verify_bit_exact");
    let rt = b.runtime(0).unwrap();
    let opts = CompileOptions {
        name: Some("t4a_test.cu".into()),
        ..CompileOptions::default()
    };
    let art = rt.compile(SOURCE, &opts).unwrap();
    let module = rt.load(&art).unwrap();
    drop(art); // the module keeps the code loaded
    let axpy = module.function("t4a_axpy_f32").unwrap();

    // Exactly representable products and sums: identical with or without FMA.
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 1024) as f32 / 8.0).collect();
    let y: Vec<f32> = (0..n).map(|i| (i % 77) as f32).collect();
    let want: Vec<u32> = x
        .iter()
        .zip(&y)
        .map(|(a, b)| (2.5 * a + b).to_bits())
        .collect();
    let (dx, dy) = (
        rt.alloc(4 * n as u64).unwrap(),
        rt.alloc(4 * n as u64).unwrap(),
    );
    dx.write(0, &x).unwrap();
    dy.write(0, &y).unwrap();
    let args = [
        Arg::U64(n as u64),
        Arg::F32(2.5),
        (&dx).into(),
        (&dy).into(),
    ];
    rt.launch(&axpy, &LaunchConfig::linear(256, 256), &args)
        .unwrap();
    rt.synchronize().unwrap();
    let mut got = vec![0f32; n];
    dy.read(0, &mut got).unwrap();
    assert!(got.iter().map(|f| f.to_bits()).eq(want.iter().copied()));
    assert_eq!(rt.counters().unwrap().launches, 1);

    let fill = module.function("t4a_fill_u32").unwrap();
    let buf = rt.alloc(4000).unwrap();
    rt.launch(
        &fill,
        &LaunchConfig::linear(4, 128),
        &[(&buf).into(), 0xdead_beefu32.into(), 1000u64.into()],
    )
    .unwrap();
    let mut words = vec![0u32; 1000];
    buf.read(0, &mut words).unwrap();
    assert!(words.iter().all(|&w| w == 0xdead_beef));
    assert!(fill.attributes().unwrap().max_threads_per_block > 0);

    // Refusals: an empty block, a missing kernel, another runtime's buffer.
    let bad = LaunchConfig {
        block: [0, 1, 1],
        ..LaunchConfig::linear(1, 1)
    };
    let e = rt
        .launch(&fill, &bad, &[(&buf).into(), 1u32.into(), 1u64.into()])
        .unwrap_err();
    assert_eq!(e.status, Status::EINVAL);
    assert!(e.message.contains("block"), "{e}");
    let e = module.function("no_such_kernel").unwrap_err();
    assert_eq!(e.status, Status::ENOTFOUND);
    assert!(e.message.contains("no_such_kernel"), "{e}");
    let other = b.runtime(0).unwrap();
    let foreign = other.alloc(4).unwrap();
    let e = rt
        .launch(
            &fill,
            &LaunchConfig::linear(1, 1),
            &[(&foreign).into(), 1u32.into(), 1u64.into()],
        )
        .unwrap_err();
    assert_eq!(e.status, Status::EINVAL);
}

#[test]
fn compile_errors_ptx_and_artifacts() {
    let b = backend!("compile_errors_ptx_and_artifacts");
    needs_compiler!(b, "compile_errors_ptx_and_artifacts");
    let rt = b.runtime(0).unwrap();
    let e = rt
        .compile(
            "#error \"deliberate\"\n__global__ void k() {}\n",
            &CompileOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.status, Status::ECOMPILE);
    assert!(
        e.log.as_deref().unwrap_or("").contains("deliberate"),
        "{e:?}"
    );

    let ptx = rt
        .compile(
            SOURCE,
            &CompileOptions {
                ptx: true,
                ..CompileOptions::default()
            },
        )
        .unwrap();
    let (kind, text) = ptx.data().unwrap();
    assert_eq!(kind, sys::T4A_ARTIFACT_PTX);
    assert!(String::from_utf8_lossy(&text).contains(".entry t4a_fill_u32"));
    let again = b
        .artifact_from_bytes(sys::T4A_ARTIFACT_PTX, &text, Some("again.ptx"))
        .unwrap();
    let module = rt.load(&again).unwrap();
    let fill = module.function("t4a_fill_u32").unwrap();
    let buf = rt.alloc(40).unwrap();
    rt.launch(
        &fill,
        &LaunchConfig::linear(1, 32),
        &[(&buf).into(), 7u32.into(), 10u64.into()],
    )
    .unwrap();
    let mut words = [0u32; 10];
    buf.read(0, &mut words).unwrap();
    assert_eq!(words, [7; 10]);
}

#[test]
fn threads_share_a_runtime_and_raw_seam() {
    let b = backend!("threads_share_a_runtime_and_raw_seam");
    let rt = b.runtime(0).unwrap();
    thread::scope(|s| {
        for seed in 1..5u32 {
            let rt = &rt;
            s.spawn(move || {
                let data = pattern(10_000, seed);
                let buf = rt.alloc(10_000).unwrap();
                let mut back = vec![0u8; 10_000];
                for _ in 0..20 {
                    buf.write(0, &data).unwrap();
                    buf.read(0, &mut back).unwrap();
                    assert!(back == data, "the data differs");
                    // last_error is per thread: each failure carries its own detail.
                    assert_eq!(
                        buf.read(10_000, &mut [0u8]).unwrap_err().status,
                        Status::ERANGE
                    );
                }
            });
        }
    });
    assert_eq!(rt.counters().unwrap().live_buffers, 0);
    let raw = rt.raw().unwrap();
    assert_eq!(raw.device_ordinal, 0);
    assert!(!raw.context.is_null() && !raw.stream.is_null());
    let section = rt.raw_begin().unwrap();
    section.end().unwrap();
    assert_eq!(rt.counters().unwrap().raw_sections, 1);
}
