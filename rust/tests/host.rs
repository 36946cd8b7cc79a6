//! The safe layer on the host backend (libt4a_host, `open("host")`): the
//! same memory, copy, completion, graph and interop wrappers as on CUDA,
//! data checked bit for bit; what the host cannot do is a typed error,
//! never a crash: the NULL slots (the raw seam, the consumer streams and
//! events) and GPU code (PTX) are `T4A_EUNSUPPORTED`; kernels are CUDA C
//! compiled by the host C++ compiler (skipped, saying why, without one).
//! Skips, saying why, when the host plugin is not installed (tests/common).
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod common;

use common::pattern;
use t4a_gpu::{
    sys, Arg, Backend, CompileOptions, DataType, Event, ExternalMemory, LaunchConfig, Rect, Status,
    Stream, TensorView,
};

macro_rules! host {
    ($test:expr) => {
        match common::open($test, Some("host")) {
            Some(b) => b,
            None => return,
        }
    };
}

#[test]
fn the_host_backend_is_a_backend() {
    let b = host!("the_host_backend_is_a_backend");
    let info = b.info().unwrap();
    assert_eq!((info.name.as_str(), info.device_count), ("host", 1));
    let d = b.device(0).unwrap();
    assert_eq!((d.cc, d.raw.warp_size), ((0, 0), 32));
    assert!(d.total_memory > 0 && d.raw.max_pitch > 0);
    let rt = b.runtime(0).unwrap();
    let i = rt.info().unwrap();
    assert!(i.graphs && !i.clusters && !i.cooperative);
    assert_eq!((i.priority_least, i.priority_greatest), (0, 0));
    let m = rt.memory_info().unwrap();
    assert!(m.device_total > 0);
}

#[test]
fn memory_copies_fills_and_rectangles() {
    let b = host!("memory_copies_fills_and_rectangles");
    let rt = b.runtime(0).unwrap();
    let data = pattern(1 << 20, 2);
    let buf = rt.alloc(1 << 20).unwrap();
    buf.write(0, &data).unwrap();
    let mut back = vec![0u8; 1 << 20];
    buf.read(0, &mut back).unwrap();
    assert!(back == data, "the data differs");
    buf.memset(16, 0xbeef, 2, 8).unwrap();
    let mut w = [0u8; 40];
    buf.read(0, &mut w).unwrap();
    assert_eq!(&w[..16], &data[..16]);
    assert!(w[16..32].chunks(2).all(|c| c == 0xbeefu16.to_ne_bytes()));
    assert_eq!(&w[32..], &data[32..40]);
    assert_eq!(buf.memset(1 << 20, 1, 1, 1).unwrap_err().status, Status::ERANGE);

    // Rectangles: pageable both ways, device to device, pinned both ways.
    let (width, rows, pitch) = (24u64, 7u64, 64u64);
    let src = pattern((width * rows) as usize, 3);
    let dev = rt.alloc(pitch * rows).unwrap();
    dev.fill(0u32).unwrap();
    dev.write_2d(&src, &Rect::new(width, rows).dst_pitch(pitch))
        .unwrap();
    let packed = rt.alloc(width * rows).unwrap();
    packed
        .copy_2d_from(&dev, &Rect::new(width, rows).src_pitch(pitch))
        .unwrap();
    let mut flat = vec![0u8; (width * rows) as usize];
    packed.read(0, &mut flat).unwrap();
    assert!(flat == src, "the data differs");
    let mut out = vec![0u8; flat.len()];
    dev.read_2d(&mut out, &Rect::new(width, rows).src_pitch(pitch))
        .unwrap();
    assert!(out == src, "the data differs");
    let hb = rt.host_alloc(pitch * rows, false).unwrap();
    // SAFETY: the host buffer is read after the synchronize.
    unsafe {
        hb.copy_2d_from_device(&packed, &Rect::new(width, rows).dst_pitch(pitch))
            .unwrap()
    };
    rt.synchronize().unwrap();
    for r in 0..rows as usize {
        let row = &hb.as_slice()[r * pitch as usize..][..width as usize];
        assert_eq!(row, &src[r * width as usize..][..width as usize]);
    }

    // Registered memory, both ways.
    let mut mine = vec![0u8; 4096];
    {
        let reg = rt.register(&mut mine).unwrap();
        // SAFETY: read after the registration dropped (which waits).
        unsafe { reg.copy_from_device(0, &buf, 0, 4096).unwrap() };
    }
    let mut want = data[..4096].to_vec();
    for c in want[16..32].chunks_mut(2) {
        c.copy_from_slice(&0xbeefu16.to_ne_bytes());
    }
    assert!(mine == want);
    let ro = rt.register_read_only(&data[..4096]).unwrap();
    let dst = rt.alloc(4096).unwrap();
    // SAFETY: `data` is borrowed, so not written, while registered.
    unsafe { dst.copy_from_pinned(0, &ro, 0, 4096).unwrap() };
    // SAFETY: refused before anything is enqueued.
    assert_eq!(
        unsafe { ro.copy_from_device(0, &dst, 0, 16) }.unwrap_err().status,
        Status::EINVAL
    );
    drop(ro);
    dst.read(0, &mut mine).unwrap();
    assert!(mine[..] == data[..4096]);
}

#[test]
fn completion_timing_and_graphs() {
    let b = host!("completion_timing_and_graphs");
    let opts = sys::t4a_runtime_options {
        flags: sys::T4A_RUNTIME_TIMING,
        ..sys::t4a_runtime_options::sized()
    };
    let rt = b.runtime_with(0, Some(&opts)).unwrap();
    let buf = rt.alloc(1 << 16).unwrap();
    let start = rt.seal().unwrap();
    buf.fill(7u32).unwrap();
    let end = rt.seal().unwrap();
    end.wait(None).unwrap();
    start.elapsed(&end).unwrap();
    assert_eq!(end.elapsed(&start).unwrap_err().status, Status::EINVAL);

    let a = rt.alloc(64).unwrap();
    a.fill(0u8).unwrap();
    let g = rt
        .capture(|| {
            a.memset(0, 0x42, 1, 32)?;
            a.copy_from(32, &buf, 0, 32)?;
            assert_eq!(rt.alloc(1).unwrap_err().status, Status::EBUSY);
            Ok(())
        })
        .unwrap();
    let mut got = [0u8; 64];
    a.read(0, &mut got).unwrap();
    assert_eq!(got, [0; 64]); // recorded, not run
    g.launch().unwrap();
    g.launch().unwrap();
    a.read(0, &mut got).unwrap();
    assert_eq!(&got[..32], &[0x42; 32]);
    assert!(got[32..].chunks(4).all(|c| c == 7u32.to_ne_bytes()));
    let i = g.info().unwrap();
    assert_eq!((i.kernels, i.replays), (0, 2));
    // A graph of copies has no kernel whose arguments could be replaced.
    assert_eq!(g.set_kernel_args(0, &[1u32.into()]).unwrap_err().status, Status::ERANGE);
}

const FILL: &str = "extern \"C\" __global__ void fill(unsigned *p, unsigned v, unsigned long long n) {\n\
                    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n\
                    if (i < n) p[i] = v + (unsigned)i;\n\
                    }\n";

#[test]
fn kernels_compile_launch_and_replay() {
    let b = host!("kernels_compile_launch_and_replay");
    if b.compiler_info().unwrap().status != Status::OK {
        eprintln!("SKIP kernels_compile_launch_and_replay: no host C++ compiler");
        return;
    }
    let rt = b.runtime(0).unwrap();
    let art = rt.compile(FILL, &CompileOptions::default()).unwrap();
    let module = rt.load(&art).unwrap();
    let fill = module.function("fill").unwrap();
    let buf = rt.alloc(4 * 1000).unwrap();
    let cfg = LaunchConfig::linear(4, 256);
    rt.launch(&fill, &cfg, &[(&buf).into(), Arg::U32(7), 1000u64.into()])
        .unwrap();
    let mut got = vec![0u32; 1000];
    buf.read(0, &mut got).unwrap();
    assert!(got.iter().enumerate().all(|(i, &w)| w == 7 + i as u32));
    // captured and replayed with new arguments
    let g = rt
        .capture(|| rt.launch(&fill, &cfg, &[(&buf).into(), 1u32.into(), 1000u64.into()]))
        .unwrap();
    g.set_kernel_args(0, &[(&buf).into(), 100u32.into(), 1000u64.into()])
        .unwrap();
    g.launch().unwrap();
    buf.read(0, &mut got).unwrap();
    assert!(got.iter().enumerate().all(|(i, &w)| w == 100 + i as u32));
    assert_eq!(g.info().unwrap().kernels, 1);
    assert_eq!(module.function("none").unwrap_err().status, Status::ENOTFOUND);
}

#[test]
fn what_the_host_cannot_do_is_a_typed_error() {
    let b = host!("what_the_host_cannot_do_is_a_typed_error");
    let rt = b.runtime(0).unwrap();
    let other = b.runtime(0).unwrap();
    // NULL slots: the raw seam and the consumer streams and events.
    let table = b.table();
    assert!(table.raw_runtime.is_none() && table.raw_begin.is_none());
    assert!(table.stream_wait_witness.is_none() && table.runtime_wait_event.is_none());
    for e in [
        rt.raw().unwrap_err(),
        rt.raw_begin().unwrap_err(),
        other.stream().unwrap_err(),
        rt.wait_stream(Stream::LEGACY).unwrap_err(),
        // SAFETY: never reaches a driver: the slot is NULL.
        rt.wait_event(unsafe { Event::from_raw(std::ptr::null_mut()) }).unwrap_err(),
        rt.order_stream_after(Stream::PER_THREAD, &rt.seal().unwrap())
            .unwrap_err(),
    ] {
        assert_eq!(e.status, Status::EUNSUPPORTED, "{e}");
        assert!(e.message.contains("does not provide"), "{e}");
    }
    // GPU code is refused with the reason (the host compiles CUDA C itself).
    let e = b
        .artifact_from_bytes(sys::T4A_ARTIFACT_PTX, b".version 8.0", None)
        .unwrap_err();
    assert_eq!(e.status, Status::EUNSUPPORTED);
    let ptx = CompileOptions {
        ptx: true,
        ..CompileOptions::default()
    };
    let e = rt.compile("extern \"C\" __global__ void k() {}", &ptx).unwrap_err();
    assert!(matches!(e.status, Status::EUNSUPPORTED | Status::ENOCOMPILER), "{e}");
    // Copies between runtimes: copy_from_runtime, not peer copies.
    let (x, y) = (rt.alloc(16).unwrap(), other.alloc(16).unwrap());
    x.write(0, &[9u8; 16]).unwrap();
    y.copy_from(0, &x, 0, 16).unwrap();
    let mut got = [0u8; 16];
    y.read(0, &mut got).unwrap();
    assert_eq!(got, [9; 16]);
    assert_eq!(y.copy_from_via_host(0, &x, 0, 16).unwrap_err().status, Status::EUNSUPPORTED);
}

#[test]
fn external_memory_and_dlpack() {
    let b = host!("external_memory_and_dlpack");
    let (rt, owner) = (b.runtime(0).unwrap(), b.runtime(0).unwrap());
    let data = pattern(8192, 6);
    let src = owner.alloc(8192).unwrap();
    src.write(0, &data).unwrap();
    rt.wait_for(&owner.seal().unwrap()).unwrap();
    let released = Arc::new(AtomicUsize::new(0));
    let r = released.clone();
    let mem = ExternalMemory {
        address: src.address().unwrap(),
        bytes: 8192,
        host: false,
        release: Some(Box::new(move || {
            r.fetch_add(1, Ordering::SeqCst);
        })),
    };
    // SAFETY: `src` outlives the release (checked below).
    let ext = unsafe { rt.wrap_external(mem) }.unwrap();
    let mut got = vec![0u8; 8192];
    ext.read(0, &mut got).unwrap();
    assert!(got == data, "the data differs");
    drop(ext);
    rt.synchronize().unwrap();
    assert_eq!(released.load(Ordering::SeqCst), 1);

    // DLPack: a round trip where the backend has it, else a typed refusal.
    let view = TensorView::new(DataType::U32, &[2048]);
    match src.dlpack(&view) {
        Ok(t) => {
            assert_eq!(t.shape(), &[2048]);
            let imported = rt.dlpack_import(t, false).unwrap();
            imported.read(0, &mut got).unwrap();
            assert!(got == data, "the data differs");
        }
        Err(e) => {
            assert_eq!((e.status, e.call), (Status::EUNSUPPORTED, "dlpack_export"), "{e}");
            assert!(b.table().dlpack_export.is_none());
        }
    };
}

#[test]
fn the_default_backend_follows_the_environment() {
    // T4A_GPU_BACKEND=host selects it for open(None) (checked in a child
    // process: the variable is process-wide).
    if std::env::var("T4A_TEST_HOST_CHILD").is_ok() {
        let b = Backend::open(None).unwrap();
        assert_eq!(b.info().unwrap().name, "host");
        return;
    }
    let _b = host!("the_default_backend_follows_the_environment");
    let exe = std::env::current_exe().unwrap();
    let out = std::process::Command::new(exe)
        .args(["--exact", "the_default_backend_follows_the_environment", "--nocapture"])
        .env("T4A_TEST_HOST_CHILD", "1")
        .env("T4A_GPU_BACKEND", "host")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("1 passed"), "{text}");
}
