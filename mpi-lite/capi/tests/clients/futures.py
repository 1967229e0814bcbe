# mpi4py.futures in its static mode (`python -m mpi4py.futures futures.py` under the
# launcher: rank 0 runs this script, the others serve as workers; no MPI_Comm_spawn).
# Prints "futures ok" on success.
from mpi4py.futures import MPIPoolExecutor


def square(x):
    return x * x


if __name__ == "__main__":
    with MPIPoolExecutor() as ex:
        got = list(ex.map(square, range(50)))
    assert got == [x * x for x in range(50)], got
    print("futures ok", flush=True)
