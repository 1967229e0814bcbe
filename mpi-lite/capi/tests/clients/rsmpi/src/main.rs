//! rsmpi on mpi-lite: a ring exchange, a broadcast, an all-reduce and a derived type.
//! Prints "rsmpi ok R/N".
use mpi::traits::*;

#[derive(Equivalence, Clone, Copy, Default, PartialEq, Debug)]
struct Padded {
    d: f64,
    c: u8,
}

fn main() {
    let universe = mpi::initialize().expect("MPI_Init");
    let world = universe.world();
    let (rank, size) = (world.rank(), world.size());
    let next = world.process_at_rank((rank + 1) % size);
    let prev = world.process_at_rank((rank + size - 1) % size);
    let (got, _): (i32, _) = mpi::point_to_point::send_receive(&rank, &next, &prev);
    assert_eq!(got, (rank + size - 1) % size);
    let mut v = if rank == 0 { [7u64, 8, 9] } else { [0; 3] };
    world.process_at_rank(0).broadcast_into(&mut v[..]);
    assert_eq!(v, [7, 8, 9]);
    let mut sum = 0;
    world.all_reduce_into(&rank, &mut sum, mpi::collective::SystemOperation::sum());
    assert_eq!(sum, size * (size - 1) / 2);
    // Arrays of a padded struct (extent 16) travel intact.
    let mine = [Padded { d: rank as f64 + 0.5, c: rank as u8 }; 4];
    let mut theirs = [Padded::default(); 4];
    mpi::point_to_point::send_receive_into(&mine[..], &next, &mut theirs[..], &prev);
    let p = (rank + size - 1) % size;
    assert_eq!(theirs, [Padded { d: p as f64 + 0.5, c: p as u8 }; 4]);
    println!("rsmpi ok {rank}/{size}");
}
