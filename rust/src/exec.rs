//! ABI 1.1 execution: runtime_info, launch_ex (clusters, cooperative
//! launches, priorities), the occupancy calculator, graphs (capture,
//! replay, new kernel arguments) and witness_elapsed.
use std::time::Duration;

use crate::{sys, Arg, ArgBlock, Function, LaunchConfig, Result, Runtime, Witness};

/// Facts of one runtime (runtime_info).
#[derive(Clone, Copy, Debug)]
pub struct RuntimeInfo {
    /// The device ordinal.
    pub device: i32,
    /// Created with `T4A_RUNTIME_TIMING`: [`Witness::elapsed`] works.
    pub timing: bool,
    /// Its stream's priority.
    pub stream_priority: i32,
    /// The device's lowest priority (usually 0).
    pub priority_least: i32,
    /// Its highest (a lower number, e.g. -5).
    pub priority_greatest: i32,
    /// Thread block clusters (`T4A_EXEC_CLUSTERS`).
    pub clusters: bool,
    /// Cooperative launches (`T4A_EXEC_COOPERATIVE`).
    pub cooperative: bool,
    /// Stream capture and graph replay (`T4A_EXEC_GRAPHS`).
    pub graphs: bool,
    /// Stream and launch priorities (`T4A_EXEC_PRIORITIES`).
    pub priorities: bool,
    /// A capture is in progress.
    pub capturing: bool,
    /// Everything the backend reported.
    pub raw: sys::t4a_runtime_info,
}

/// An extended launch (launch_ex): [`LaunchConfig`]'s geometry plus
/// clusters, a cooperative launch and a per-launch priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchExConfig {
    /// Blocks per dimension (each >= 1).
    pub grid: [u32; 3],
    /// Threads per block per dimension (each >= 1).
    pub block: [u32; 3],
    /// Dynamic shared memory per block.
    pub shared_bytes: u32,
    /// Blocks per cluster per dimension, each dividing the grid's; all 0:
    /// no clusters.
    pub cluster: [u32; 3],
    /// Clusters above the portable 8 blocks
    /// (`T4A_LAUNCH_CLUSTER_NON_PORTABLE`).
    pub non_portable_cluster: bool,
    /// Every block co-resident (`T4A_LAUNCH_COOPERATIVE`).
    pub cooperative: bool,
    /// This launch's priority (`T4A_LAUNCH_PRIORITY`), in the stream
    /// priorities' range.
    pub priority: Option<i32>,
}

impl From<LaunchConfig> for LaunchExConfig {
    fn from(c: LaunchConfig) -> LaunchExConfig {
        LaunchExConfig {
            grid: c.grid,
            block: c.block,
            shared_bytes: c.shared_bytes,
            cluster: [0; 3],
            non_portable_cluster: false,
            cooperative: false,
            priority: None,
        }
    }
}

impl LaunchExConfig {
    /// A one-dimensional launch without options.
    pub fn linear(grid: u32, block: u32) -> LaunchExConfig {
        LaunchConfig::linear(grid, block).into()
    }

    /// The same in clusters of `blocks` (one-dimensional).
    pub fn with_cluster(self, blocks: u32) -> LaunchExConfig {
        LaunchExConfig {
            cluster: [blocks, 1, 1],
            ..self
        }
    }

    fn to_sys(self) -> sys::t4a_launch_ex_config {
        let flags = (if self.cooperative {
            sys::T4A_LAUNCH_COOPERATIVE
        } else {
            0
        }) | (if self.non_portable_cluster {
            sys::T4A_LAUNCH_CLUSTER_NON_PORTABLE
        } else {
            0
        }) | (if self.priority.is_some() {
            sys::T4A_LAUNCH_PRIORITY
        } else {
            0
        });
        sys::t4a_launch_ex_config {
            flags,
            grid: self.grid,
            block: self.block,
            shared_bytes: self.shared_bytes,
            cluster: self.cluster,
            priority: self.priority.unwrap_or(0),
            ..sys::t4a_launch_ex_config::sized()
        }
    }
}

impl<'b> Runtime<'b> {
    /// The runtime's device, flags, priorities, what launch_ex and graphs
    /// can do here, and whether a capture is in progress (runtime_info).
    pub fn info(&self) -> Result<RuntimeInfo> {
        let mut i = sys::t4a_runtime_info::sized();
        call!(self.backend, runtime_info(self.handle, &mut i))?;
        Ok(RuntimeInfo {
            device: i.device_ordinal,
            timing: i.flags & sys::T4A_RUNTIME_TIMING != 0,
            stream_priority: i.stream_priority,
            priority_least: i.priority_least,
            priority_greatest: i.priority_greatest,
            clusters: i.exec_flags & sys::T4A_EXEC_CLUSTERS != 0,
            cooperative: i.exec_flags & sys::T4A_EXEC_COOPERATIVE != 0,
            graphs: i.exec_flags & sys::T4A_EXEC_GRAPHS != 0,
            priorities: i.exec_flags & sys::T4A_EXEC_PRIORITIES != 0,
            capturing: i.capturing != 0,
            raw: i,
        })
    }

    /// Enqueues `f` with `args` through launch_ex (clusters, cooperative,
    /// priority); arguments as for [`Runtime::launch`].
    pub fn launch_ex(
        &self,
        f: &Function<'_>,
        cfg: &LaunchExConfig,
        args: &[Arg<'_>],
    ) -> Result<()> {
        self.check_function(f, "launch_ex")?;
        let mut block = ArgBlock::new(self, args, "launch_ex")?;
        let c = cfg.to_sys();
        call!(
            self.backend,
            launch_ex(self.handle, f.handle, &c, block.as_args())
        )
    }

    /// Starts capturing this runtime's work into a graph (graph_begin):
    /// until [`Capture::end`], launches, the pinned and device copies and
    /// memsets are recorded instead of run; what cannot be captured is
    /// refused with `T4A_EBUSY` (allocate before, free after). Dropping the
    /// capture without `end` discards it.
    pub fn graph_begin(&self) -> Result<Capture<'_>> {
        // A witness of the work before the capture, for `drain` during it,
        // stored before anyone can see the capture (the lock is held across
        // graph_begin).
        let base = self.seal()?;
        let mut slot = self.capture_base.lock().unwrap_or_else(|p| p.into_inner());
        call!(self.backend, graph_begin(self.handle))?; // else `base` drops
        let old = std::mem::replace(&mut *slot, base.handle.bits);
        drop(slot);
        std::mem::forget(base); // released by the capture's end
        if old != 0 {
            let _ = call!(
                self.backend,
                witness_release(sys::t4a_witness { bits: old })
            );
        }
        Ok(Capture {
            rt: self,
            open: true,
        })
    }

    /// Captures what `f` enqueues into a graph: [`Runtime::graph_begin`],
    /// `f`, [`Capture::end`]; an error of `f` discards the capture.
    pub fn capture<F>(&self, f: F) -> Result<Graph<'_>>
    where
        F: FnOnce() -> Result<()>,
    {
        let c = self.graph_begin()?;
        f()?;
        c.end()
    }
}

/// A capture in progress ([`Runtime::graph_begin`]); [`Capture::end`]
/// makes the graph, Drop discards it.
#[derive(Debug)]
pub struct Capture<'r> {
    rt: &'r Runtime<'r>,
    open: bool,
}

impl<'r> Capture<'r> {
    /// Ends the capture and instantiates the recorded work (graph_end),
    /// which has not run. A captured call that failed, or a failed
    /// instantiation, ends the capture all the same and returns why.
    pub fn end(mut self) -> Result<Graph<'r>> {
        let mut handle = sys::t4a_graph::default();
        let r = self.finish(&mut handle);
        r.map(|()| Graph {
            rt: self.rt,
            handle,
        })
    }

    fn finish(&mut self, handle: &mut sys::t4a_graph) -> Result<()> {
        self.open = false;
        let rt = self.rt;
        let r = call!(rt.backend, graph_end(rt.handle, handle));
        let mut slot = rt.capture_base.lock().unwrap_or_else(|p| p.into_inner());
        let base = std::mem::take(&mut *slot);
        drop(slot);
        if base != 0 {
            let _ = call!(rt.backend, witness_release(sys::t4a_witness { bits: base }));
        }
        r
    }
}

impl Drop for Capture<'_> {
    fn drop(&mut self) {
        if self.open {
            let mut handle = sys::t4a_graph::default();
            if self.finish(&mut handle).is_ok() && handle.bits != 0 {
                let _ = call!(self.rt.backend, graph_release(self.rt.handle, handle));
            }
        }
    }
}

/// A captured graph of one runtime, which it borrows: replayed by
/// [`Graph::launch`], released in Drop (graph_release; destroyed after its
/// last replay completed). It cannot outlive its runtime:
///
/// ```compile_fail,E0597
/// let backend = t4a_gpu::Backend::open(None)?;
/// let graph = {
///     let rt = backend.runtime(0)?;
///     rt.capture(|| Ok(()))?
/// }; // error: `rt` does not live long enough
/// graph.launch()?;
/// # Ok::<(), t4a_gpu::Error>(())
/// ```
#[derive(Debug)]
pub struct Graph<'r> {
    rt: &'r Runtime<'r>,
    handle: sys::t4a_graph,
}

impl<'r> Graph<'r> {
    /// The handle.
    pub fn handle(&self) -> sys::t4a_graph {
        self.handle
    }

    /// The runtime owning it.
    pub fn runtime(&self) -> &'r Runtime<'r> {
        self.rt
    }

    /// Enqueues a replay on the runtime's stream, in call order (the
    /// buffers and functions the captured work names must still be live:
    /// else `T4A_EHANDLE`).
    pub fn launch(&self) -> Result<()> {
        call!(self.rt.backend, graph_launch(self.rt.handle, self.handle))
    }

    /// Replaces the arguments of captured kernel `kernel` (0-based, in
    /// capture order) for later replays (graph_set_kernel_args); `args` as
    /// for [`Runtime::launch`], copied now.
    pub fn set_kernel_args(&self, kernel: u64, args: &[Arg<'_>]) -> Result<()> {
        let mut block = ArgBlock::new(self.rt, args, "graph_set_kernel_args")?;
        call!(
            self.rt.backend,
            graph_set_kernel_args(self.rt.handle, self.handle, kernel, block.as_args())
        )
    }

    /// What the graph holds and how often it was replayed.
    pub fn info(&self) -> Result<sys::t4a_graph_info> {
        let mut i = sys::t4a_graph_info::sized();
        call!(
            self.rt.backend,
            graph_info(self.rt.handle, self.handle, &mut i)
        )?;
        Ok(i)
    }

    /// Releases the graph with the status checked (Drop ignores it).
    pub fn release(mut self) -> Result<()> {
        let h = std::mem::take(&mut self.handle);
        call!(self.rt.backend, graph_release(self.rt.handle, h))
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        if self.handle.bits != 0 {
            let _ = call!(self.rt.backend, graph_release(self.rt.handle, self.handle));
        }
    }
}

impl Function<'_> {
    /// How many blocks of `block_threads` threads with `shared_bytes` of
    /// dynamic shared memory one multiprocessor holds at once.
    pub fn max_active_blocks(&self, block_threads: u32, shared_bytes: u32) -> Result<u32> {
        let rt = self.module.rt;
        let mut n = 0u32;
        call!(
            rt.backend,
            occupancy_max_active_blocks(rt.handle, self.handle, block_threads, shared_bytes, &mut n)
        )?;
        Ok(n)
    }

    /// (block size, smallest grid filling the device) maximising occupancy
    /// with `shared_bytes` per block, at most `block_limit` threads (0: the
    /// kernel's limit).
    pub fn suggest_block_size(&self, shared_bytes: u32, block_limit: u32) -> Result<(u32, u32)> {
        let rt = self.module.rt;
        let (mut block, mut grid) = (0u32, 0u32);
        call!(
            rt.backend,
            occupancy_suggest_block_size(
                rt.handle,
                self.handle,
                shared_bytes,
                block_limit,
                &mut block,
                &mut grid
            )
        )?;
        Ok((block, grid))
    }

    /// How many clusters of `cfg`'s shape (its cluster must be set) can be
    /// resident on the device at once.
    pub fn max_active_clusters(&self, cfg: &LaunchExConfig) -> Result<u32> {
        let rt = self.module.rt;
        let c = cfg.to_sys();
        let mut n = 0u32;
        call!(
            rt.backend,
            occupancy_max_active_clusters(rt.handle, self.handle, &c, &mut n)
        )?;
        Ok(n)
    }
}

impl Witness<'_> {
    /// GPU time from this witness's completion point to `end`'s
    /// (witness_elapsed), both of one runtime created with
    /// `T4A_RUNTIME_TIMING` (else `T4A_EUNSUPPORTED`); `T4A_ENOTREADY`
    /// until both completed; a negative span is `T4A_EINVAL`.
    pub fn elapsed(&self, end: &Witness<'_>) -> Result<Duration> {
        let mut ns = 0u64;
        call!(
            self.backend,
            witness_elapsed(self.handle, end.handle, &mut ns)
        )?;
        Ok(Duration::from_nanos(ns))
    }
}
