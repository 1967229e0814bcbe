//! Topologies (MPI-3.1 chapter 7): Dims_create, Cartesian and distributed-graph calls.

use std::ffi::c_int;

use mpi_lite::comm::Topology;
use mpi_lite::topo;
use mpi_lite::{Error, Result};

use super::{arr, arr_mut, mpi_fn, put};
use crate::state::{call, call_pure, h, CState};

/// `MPI_UNWEIGHTED` and `MPI_WEIGHTS_EMPTY` are the addresses of these (as MPICH's are of
/// objects of its own): a constant like `(int *)2` made GCC warn, under `-Werror` fail, on
/// every call passing one ("reading 4 bytes from a region of size 0"). Never written.
#[no_mangle]
pub static mpi_lite_unweighted: c_int = 0;
/// See [`mpi_lite_unweighted`].
#[no_mangle]
pub static mpi_lite_weights_empty: c_int = 0;

fn is_unweighted(p: *const c_int) -> bool {
    std::ptr::eq(p, &mpi_lite_unweighted)
}
fn is_weights_empty(p: *const c_int) -> bool {
    std::ptr::eq(p, &mpi_lite_weights_empty)
}

fn cart(st: &CState, comm: c_int) -> Result<(Vec<i32>, Vec<bool>, usize)> {
    let c = st.comm(comm)?;
    match &c.topo {
        Some(Topology::Cart { dims, periods }) => Ok((dims.clone(), periods.clone(), c.rank)),
        _ => Err(Error::Topology(format!(
            "communicator {comm} has no Cartesian topology"
        ))),
    }
}

mpi_fn!(MPI_Dims_create, PMPI_Dims_create, (nnodes: c_int, ndims: c_int, dims: *mut c_int) -> c_int {
    call_pure("MPI_Dims_create", || {
        let n = usize::try_from(ndims).map_err(|_| Error::Dims(format!("ndims {ndims} is negative")))?;
        // SAFETY: `ndims` ints of the caller.
        let d = unsafe { arr_mut(dims, n, "dims")? };
        topo::dims_create(nnodes, d)
    })
});

mpi_fn!(MPI_Cart_create, PMPI_Cart_create, (comm_old: c_int, ndims: c_int, dims: *const c_int,
        periods: *const c_int, _reorder: c_int, comm_cart: *mut c_int) -> c_int {
    call("MPI_Cart_create", comm_old, |st| {
        let c = st.comm(comm_old)?;
        // SAFETY: `ndims` ints in each array.
        let (d, p) = unsafe { (arr(dims, ndims, "dims")?, arr(periods, ndims, "periods")?) };
        let p: Vec<bool> = p.iter().map(|&x| x != 0).collect();
        let r = st.mpi.cart_create(&c, d, &p)?;
        let hd = match r {
            Some(x) => st.add_comm(x),
            None => h::COMM_NULL,
        };
        // SAFETY: the caller's handle.
        unsafe { put(comm_cart, hd, "comm_cart") }
    })
});

mpi_fn!(MPI_Cart_coords, PMPI_Cart_coords, (comm: c_int, rank: c_int, maxdims: c_int, coords: *mut c_int) -> c_int {
    call("MPI_Cart_coords", comm, |st| {
        let (dims, _, _) = cart(st, comm)?;
        let n: i32 = dims.iter().product();
        if !(0..n).contains(&rank) {
            return Err(Error::Rank(format!("MPI_Cart_coords: rank {rank} not in a grid of {n}")));
        }
        if (maxdims as usize) < dims.len() || maxdims < 0 {
            return Err(Error::Arg(format!("MPI_Cart_coords: maxdims {maxdims} < {}", dims.len())));
        }
        // SAFETY: `maxdims` ints of the caller.
        let out = unsafe { arr_mut(coords, dims.len(), "coords")? };
        out.copy_from_slice(&topo::cart_coords(&dims, rank));
        Ok(())
    })
});

mpi_fn!(MPI_Cart_rank, PMPI_Cart_rank, (comm: c_int, coords: *const c_int, rank: *mut c_int) -> c_int {
    call("MPI_Cart_rank", comm, |st| {
        let (dims, periods, _) = cart(st, comm)?;
        // SAFETY: ndims ints of the caller.
        let c = unsafe { arr(coords, dims.len() as c_int, "coords")? };
        let r = topo::cart_rank(&dims, &periods, c)?;
        // SAFETY: the caller's int.
        unsafe { put(rank, r, "rank") }
    })
});

mpi_fn!(MPI_Cart_shift, PMPI_Cart_shift, (comm: c_int, direction: c_int, disp: c_int, rank_source: *mut c_int,
        rank_dest: *mut c_int) -> c_int {
    call("MPI_Cart_shift", comm, |st| {
        let (dims, periods, me) = cart(st, comm)?;
        let dir = usize::try_from(direction).ok().filter(|&d| d < dims.len())
            .ok_or_else(|| Error::Arg(format!("MPI_Cart_shift: direction {direction} of {} dimensions", dims.len())))?;
        let (s, d) = topo::cart_shift(&dims, &periods, me as i32, dir, disp);
        // SAFETY: the caller's ints.
        unsafe {
            put(rank_source, s, "rank_source")?;
            put(rank_dest, d, "rank_dest")
        }
    })
});

mpi_fn!(MPI_Cart_get, PMPI_Cart_get, (comm: c_int, maxdims: c_int, dims: *mut c_int, periods: *mut c_int,
        coords: *mut c_int) -> c_int {
    call("MPI_Cart_get", comm, |st| {
        let (d, p, me) = cart(st, comm)?;
        if maxdims < 0 || (maxdims as usize) < d.len() {
            return Err(Error::Arg(format!("MPI_Cart_get: maxdims {maxdims} < {}", d.len())));
        }
        // SAFETY: `maxdims` ints in each array of the caller.
        let (od, op, oc) = unsafe {
            (arr_mut(dims, d.len(), "dims")?, arr_mut(periods, d.len(), "periods")?, arr_mut(coords, d.len(), "coords")?)
        };
        od.copy_from_slice(&d);
        for (o, &x) in op.iter_mut().zip(&p) {
            *o = x as c_int;
        }
        oc.copy_from_slice(&topo::cart_coords(&d, me as i32));
        Ok(())
    })
});

mpi_fn!(MPI_Cartdim_get, PMPI_Cartdim_get, (comm: c_int, ndims: *mut c_int) -> c_int {
    call("MPI_Cartdim_get", comm, |st| {
        let (d, _, _) = cart(st, comm)?;
        // SAFETY: the caller's int.
        unsafe { put(ndims, d.len() as c_int, "ndims") }
    })
});

mpi_fn!(MPI_Topo_test, PMPI_Topo_test, (comm: c_int, status: *mut c_int) -> c_int {
    call("MPI_Topo_test", comm, |st| {
        let t = match st.comm(comm)?.topo {
            None => -32766,
            Some(Topology::Graph { .. }) => 1,
            Some(Topology::Cart { .. }) => 2,
            Some(Topology::DistGraph { .. }) => 3,
        };
        // SAFETY: the caller's int.
        unsafe { put(status, t, "status") }
    })
});

/// Neighbour list with weights (1 each when unweighted).
///
/// # Safety
/// `ranks` holds `n` ints; `w` is MPI_UNWEIGHTED, MPI_WEIGHTS_EMPTY or `n` ints.
unsafe fn neighbours(
    n: c_int,
    ranks: *const c_int,
    w: *const c_int,
    what: &str,
) -> Result<(Vec<(i32, i32)>, bool)> {
    // SAFETY: forwarded.
    let r = unsafe { arr(ranks, n, what)? };
    // Weighted unless MPI_UNWEIGHTED; MPI_WEIGHTS_EMPTY is the weights of no neighbour
    // (MPI-3.1 §7.5.4): weighted, and only valid with a degree of 0.
    let weighted = !is_unweighted(w);
    if is_weights_empty(w) && n != 0 {
        return Err(Error::Arg(format!(
            "{what}: MPI_WEIGHTS_EMPTY with {n} neighbours"
        )));
    }
    let ws: Vec<i32> = if weighted && n > 0 {
        // SAFETY: forwarded.
        unsafe { arr(w, n, "weights")? }.to_vec()
    } else {
        vec![1; r.len()]
    };
    Ok((r.iter().copied().zip(ws).collect(), weighted))
}

mpi_fn!(MPI_Dist_graph_create_adjacent, PMPI_Dist_graph_create_adjacent, (comm_old: c_int, indegree: c_int,
        sources: *const c_int, sourceweights: *const c_int, outdegree: c_int, destinations: *const c_int,
        destweights: *const c_int, _info: c_int, _reorder: c_int, comm_dist_graph: *mut c_int) -> c_int {
    call("MPI_Dist_graph_create_adjacent", comm_old, |st| {
        let c = st.comm(comm_old)?;
        // SAFETY: MPI contract for the four arrays.
        let ((s, ws), (d, wd)) = unsafe {
            (neighbours(indegree, sources, sourceweights, "sources")?,
             neighbours(outdegree, destinations, destweights, "destinations")?)
        };
        let g = st.mpi.dist_graph_adjacent(&c, s, d, ws || wd)?;
        let hd = st.add_comm(g);
        // SAFETY: the caller's handle.
        unsafe { put(comm_dist_graph, hd, "comm_dist_graph") }
    })
});

/// (sources, destinations, weighted) of a distributed graph.
type Graph = (Vec<(i32, i32)>, Vec<(i32, i32)>, bool);

fn graph(st: &CState, comm: c_int) -> Result<Graph> {
    match &st.comm(comm)?.topo {
        Some(Topology::DistGraph {
            sources,
            dests,
            weighted,
        }) => Ok((sources.clone(), dests.clone(), *weighted)),
        _ => Err(Error::Topology(format!(
            "communicator {comm} has no distributed graph topology"
        ))),
    }
}

mpi_fn!(MPI_Dist_graph_neighbors_count, PMPI_Dist_graph_neighbors_count, (comm: c_int, indegree: *mut c_int,
        outdegree: *mut c_int, weighted: *mut c_int) -> c_int {
    call("MPI_Dist_graph_neighbors_count", comm, |st| {
        let (s, d, w) = graph(st, comm)?;
        // SAFETY: the caller's ints.
        unsafe {
            put(indegree, s.len() as c_int, "indegree")?;
            put(outdegree, d.len() as c_int, "outdegree")?;
            put(weighted, w as c_int, "weighted")
        }
    })
});

mpi_fn!(MPI_Dist_graph_neighbors, PMPI_Dist_graph_neighbors, (comm: c_int, maxindegree: c_int, sources: *mut c_int,
        sourceweights: *mut c_int, maxoutdegree: c_int, destinations: *mut c_int, destweights: *mut c_int) -> c_int {
    call("MPI_Dist_graph_neighbors", comm, |st| {
        let (s, d, w) = graph(st, comm)?;
        if (maxindegree as usize) < s.len() || (maxoutdegree as usize) < d.len() || maxindegree < 0 || maxoutdegree < 0 {
            return Err(Error::Arg("MPI_Dist_graph_neighbors: arrays shorter than the degrees".into()));
        }
        let fill = |list: &[(i32, i32)], r: *mut c_int, wt: *mut c_int, what: &str| -> Result<()> {
            // SAFETY: at least `list.len()` ints of the caller (checked against max*degree).
            let out = unsafe { arr_mut(r, list.len(), what)? };
            for (o, &(x, _)) in out.iter_mut().zip(list) {
                *o = x;
            }
            if w && !is_unweighted(wt) && !wt.is_null() {
                // SAFETY: as above, for the weights.
                let ow = unsafe { arr_mut(wt, list.len(), "weights")? };
                for (o, &(_, y)) in ow.iter_mut().zip(list) {
                    *o = y;
                }
            }
            Ok(())
        };
        fill(&s, sources, sourceweights, "sources")?;
        fill(&d, destinations, destweights, "destinations")
    })
});

mpi_fn!(MPI_Cart_sub, PMPI_Cart_sub, (comm: c_int, remain_dims: *const c_int, newcomm: *mut c_int) -> c_int {
    call("MPI_Cart_sub", comm, |st| {
        let (d, _, _) = cart(st, comm)?;
        // SAFETY: one int per dimension (MPI contract).
        let r: Vec<bool> = unsafe { arr(remain_dims, d.len() as c_int, "remain_dims")? }.iter().map(|&x| x != 0).collect();
        let c = st.comm(comm)?;
        let sub = st.mpi.cart_sub(&c, &r)?;
        let hd = st.add_comm(sub);
        // SAFETY: the caller's handle.
        unsafe { put(newcomm, hd, "newcomm") }
    })
});

/// `MPI_Cart_map` / `MPI_Graph_map` without reordering (§7.5.8): the first `n` ranks of
/// `comm` keep their rank, the others are `MPI_UNDEFINED`.
fn map_rank(st: &CState, comm: c_int, n: i64, newrank: *mut c_int) -> Result<()> {
    let c = st.comm(comm)?;
    if n > c.size() as i64 {
        return Err(Error::Topology(format!(
            "a topology of {n} processes in a communicator of {}",
            c.size()
        )));
    }
    let r = if (c.rank as i64) < n {
        c.rank as c_int
    } else {
        -32766
    };
    // SAFETY: the caller's int.
    unsafe { put(newrank, r, "newrank") }
}

mpi_fn!(MPI_Cart_map, PMPI_Cart_map, (comm: c_int, ndims: c_int, dims: *const c_int, _periods: *const c_int,
        newrank: *mut c_int) -> c_int {
    call("MPI_Cart_map", comm, |st| {
        // SAFETY: `ndims` ints (MPI contract).
        let d = unsafe { arr(dims, ndims, "dims")? };
        if d.iter().any(|&x| x <= 0) {
            return Err(Error::Dims("MPI_Cart_map: dimensions must be positive".into()));
        }
        map_rank(st, comm, d.iter().map(|&x| x as i64).product(), newrank)
    })
});

mpi_fn!(MPI_Graph_map, PMPI_Graph_map, (comm: c_int, nnodes: c_int, _index: *const c_int, _edges: *const c_int,
        newrank: *mut c_int) -> c_int {
    call("MPI_Graph_map", comm, |st| {
        if nnodes < 0 {
            return Err(Error::Arg(format!("MPI_Graph_map: nnodes {nnodes} is negative")));
        }
        map_rank(st, comm, nnodes as i64, newrank)
    })
});

// ---- graph topologies (§7.5.3) ----

/// (index, edges) of a graph communicator.
fn graph_of(st: &CState, comm: c_int) -> Result<(Vec<i32>, Vec<i32>)> {
    match &st.comm(comm)?.topo {
        Some(Topology::Graph { index, edges }) => Ok((index.clone(), edges.clone())),
        _ => Err(Error::Topology(format!(
            "communicator {comm} has no graph topology"
        ))),
    }
}

mpi_fn!(MPI_Graph_create, PMPI_Graph_create, (comm_old: c_int, nnodes: c_int, index: *const c_int,
        edges: *const c_int, _reorder: c_int, comm_graph: *mut c_int) -> c_int {
    call("MPI_Graph_create", comm_old, |st| {
        // SAFETY: `nnodes` ints, then index[nnodes-1] ints (MPI contract).
        let idx = unsafe { arr(index, nnodes, "index")? };
        let ne = idx.last().copied().unwrap_or(0);
        // SAFETY: as above.
        let e = unsafe { arr(edges, ne, "edges")? };
        let c = st.comm(comm_old)?;
        let g = st.mpi.graph_create(&c, idx, e)?;
        let hd = match g {
            Some(g) => st.add_comm(g),
            None => h::COMM_NULL,
        };
        // SAFETY: the caller's handle.
        unsafe { put(comm_graph, hd, "comm_graph") }
    })
});

mpi_fn!(MPI_Graphdims_get, PMPI_Graphdims_get, (comm: c_int, nnodes: *mut c_int, nedges: *mut c_int) -> c_int {
    call("MPI_Graphdims_get", comm, |st| {
        let (i, e) = graph_of(st, comm)?;
        // SAFETY: the caller's ints.
        unsafe {
            put(nnodes, i.len() as c_int, "nnodes")?;
            put(nedges, e.len() as c_int, "nedges")
        }
    })
});

mpi_fn!(MPI_Graph_get, PMPI_Graph_get, (comm: c_int, maxindex: c_int, maxedges: c_int, index: *mut c_int,
        edges: *mut c_int) -> c_int {
    call("MPI_Graph_get", comm, |st| {
        let (i, e) = graph_of(st, comm)?;
        let (mi, me) = (maxindex.max(0) as usize, maxedges.max(0) as usize);
        // SAFETY: `maxindex` and `maxedges` ints of the caller.
        let (oi, oe) = unsafe { (arr_mut(index, mi.min(i.len()), "index")?, arr_mut(edges, me.min(e.len()), "edges")?) };
        oi.copy_from_slice(&i[..oi.len()]);
        oe.copy_from_slice(&e[..oe.len()]);
        Ok(())
    })
});

/// The neighbours of `rank` in a graph communicator.
fn graph_neighbours(st: &CState, comm: c_int, rank: c_int) -> Result<Vec<i32>> {
    let (i, e) = graph_of(st, comm)?;
    let r = usize::try_from(rank)
        .ok()
        .filter(|&r| r < i.len())
        .ok_or_else(|| {
            Error::Rank(format!(
                "rank {rank} is not a node of a graph of {}",
                i.len()
            ))
        })?;
    let lo = if r == 0 { 0 } else { i[r - 1] as usize };
    Ok(e[lo..i[r] as usize].to_vec())
}

mpi_fn!(MPI_Graph_neighbors_count, PMPI_Graph_neighbors_count, (comm: c_int, rank: c_int, nneighbors: *mut c_int) -> c_int {
    call("MPI_Graph_neighbors_count", comm, |st| {
        let n = graph_neighbours(st, comm, rank)?.len() as c_int;
        // SAFETY: the caller's int.
        unsafe { put(nneighbors, n, "nneighbors") }
    })
});

mpi_fn!(MPI_Graph_neighbors, PMPI_Graph_neighbors, (comm: c_int, rank: c_int, maxneighbors: c_int,
        neighbors: *mut c_int) -> c_int {
    call("MPI_Graph_neighbors", comm, |st| {
        let v = graph_neighbours(st, comm, rank)?;
        let m = (maxneighbors.max(0) as usize).min(v.len());
        // SAFETY: `maxneighbors` ints of the caller.
        let out = unsafe { arr_mut(neighbors, m, "neighbors")? };
        out.copy_from_slice(&v[..m]);
        Ok(())
    })
});

mpi_fn!(MPI_Dist_graph_create, PMPI_Dist_graph_create, (comm_old: c_int, n: c_int, sources: *const c_int,
        degrees: *const c_int, destinations: *const c_int, weights: *const c_int, _info: c_int,
        _reorder: c_int, comm_dist_graph: *mut c_int) -> c_int {
    call("MPI_Dist_graph_create", comm_old, |st| {
        // SAFETY: `n` sources and degrees, then the sum of the degrees in destinations and
        // weights (MPI contract; weights may be MPI_UNWEIGHTED or MPI_WEIGHTS_EMPTY).
        let (s, d) = unsafe { (arr(sources, n, "sources")?, arr(degrees, n, "degrees")?) };
        let total: c_int = d.iter().map(|&x| x.max(0)).sum();
        // SAFETY: as above.
        let (dst, (w, weighted)) = unsafe {
            let (pairs, weighted) = neighbours(total, destinations, weights, "MPI_Dist_graph_create")?;
            (pairs.iter().map(|p| p.0).collect::<Vec<_>>(), (pairs.iter().map(|p| p.1).collect::<Vec<_>>(), weighted))
        };
        let mut edges = Vec::with_capacity(total as usize);
        let mut k = 0;
        for (i, &src) in s.iter().enumerate() {
            for _ in 0..d[i].max(0) {
                edges.push((src, dst[k], w[k]));
                k += 1;
            }
        }
        let c = st.comm(comm_old)?;
        let g = st.mpi.dist_graph_create(&c, &edges, weighted)?;
        let hd = st.add_comm(g);
        // SAFETY: the caller's handle.
        unsafe { put(comm_dist_graph, hd, "comm_dist_graph") }
    })
});
