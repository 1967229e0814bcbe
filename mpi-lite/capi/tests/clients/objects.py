# mpi4py's object API (pickled Python objects) on mpi-lite: point-to-point, nonblocking,
# probe, every collective of objects, mpi4py.util.pkl5. Run under skifrun with 1-4 ranks;
# prints "objects ok R/N" on success, raises (exit 1) on the first wrong value.
from mpi4py import MPI
from mpi4py.util import pkl5

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
nxt, prv = (rank + 1) % size, (rank - 1) % size


def obj(r):
    return {"rank": r, "list": list(range(r + 3)), "text": "x" * (r + 1), "nested": (r, [r] * 2)}


# point-to-point of objects (blocking, sendrecv, nonblocking, probe + recv)
got = comm.sendrecv(obj(rank), dest=nxt, sendtag=1, source=prv, recvtag=1)
assert got == obj(prv), got
req = comm.isend(obj(rank), dest=nxt, tag=2)
got = comm.recv(source=prv, tag=2)
req.wait()
assert got == obj(prv)
r = comm.irecv(source=prv, tag=3)
comm.send([rank] * 1000, dest=nxt, tag=3)
assert r.wait() == [prv] * 1000
comm.send(("probe", rank), dest=nxt, tag=4)
st = MPI.Status()
comm.probe(source=MPI.ANY_SOURCE, tag=4, status=st)
assert st.Get_source() == prv
assert comm.recv(source=st.Get_source(), tag=4) == ("probe", prv)

# collectives of objects
root = size - 1
assert comm.bcast(obj(root) if rank == root else None, root=root) == obj(root)
g = comm.gather(obj(rank), root=0)
assert g == ([obj(i) for i in range(size)] if rank == 0 else None)
assert comm.scatter([obj(i) for i in range(size)] if rank == 0 else None, root=0) == obj(rank)
assert comm.allgather(rank * 10) == [i * 10 for i in range(size)]
assert comm.alltoall([(rank, i) for i in range(size)]) == [(i, rank) for i in range(size)]
assert comm.reduce(rank, op=MPI.SUM, root=0) == (size * (size - 1) // 2 if rank == 0 else None)
assert comm.allreduce(rank, op=MPI.MAX) == size - 1
assert comm.allreduce([rank], op=MPI.SUM) == list(range(size))  # list concatenation
assert comm.scan(rank) == rank * (rank + 1) // 2
ex = comm.exscan(rank)
assert ex == (None if rank == 0 else rank * (rank - 1) // 2), ex
comm.barrier()

# a duplicated communicator keeps its own traffic (and attributes)
dup = comm.Dup()
assert dup.allreduce(1) == size
dup.Free()

# pkl5: large objects through matched probe
c5 = pkl5.Intracomm(comm)
big = bytes([rank % 256]) * (1 << 20)
got = c5.sendrecv(big, dest=nxt, source=prv)
assert got == bytes([prv % 256]) * (1 << 20)
req = c5.isend(obj(rank), dest=nxt, tag=5)
assert c5.recv(source=prv, tag=5) == obj(prv)
req.wait()
assert c5.bcast(big if rank == 0 else None, root=0) == bytes([0]) * (1 << 20)

print(f"objects ok {rank}/{size}", flush=True)
