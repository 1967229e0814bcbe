//! Joining an ofi job from the launcher's environment (`SKIFCH_DRIVER=ofi`):
//!
//! | started by | bootstrap (address exchange) | loss reports |
//! | --- | --- | --- |
//! | `skifrun --driver ofi` | the shm job `skifrun` made ([`ShmBoot`]: an all-gather over its port 0) | heartbeats, and the launcher's job state (a rank that exits without finalizing is lost at once) |
//! | `mpiexec.hydra`, `srun --mpi=pmi2` | [`crate::boot::from_env`] (PMI-1) | heartbeats |

use std::sync::{Arc, Mutex};

use skifch::coll::ProtoGroup;
use skifch::proto::Endpoint;
use skifch::{Driver, Result};

use super::{Config, Keep, OfiJob};
use crate::boot::Bootstrap;
use crate::shm::{ShmDriver, ShmJob};

/// A [`Bootstrap`] over the shm job `skifrun` started (one node): the collectives of the
/// core's active-message layer on shm port 0, which the ofi job leaves unused.
pub struct ShmBoot {
    job: ShmJob,
    ep: Mutex<(Endpoint<<ShmDriver as Driver>::Port>, ProtoGroup)>,
}

impl ShmBoot {
    /// Opens shm port 0 of `job`.
    ///
    /// # Collective Operation
    /// Every rank of the job calls it before its first collective call.
    pub fn new(job: &ShmJob) -> Result<ShmBoot> {
        let ep = Endpoint::open(job, 0)?;
        let g = ProtoGroup::world(&ep);
        Ok(ShmBoot {
            job: job.clone(),
            ep: Mutex::new((ep, g)),
        })
    }
}

impl Bootstrap for ShmBoot {
    fn rank(&self) -> u32 {
        self.job.rank()
    }
    fn size(&self) -> u32 {
        self.job.size()
    }
    fn node_of(&self, _rank: u32) -> u32 {
        0
    }
    fn allgather(&self, mine: &[u8]) -> Result<Vec<Vec<u8>>> {
        let mut g = self.ep.lock().unwrap_or_else(|p| p.into_inner());
        let (ep, group) = &mut *g;
        skifch::coll::allgather_bytes(&group.on(ep), mine)
    }
    fn barrier(&self) -> Result<()> {
        self.allgather(&[]).map(drop)
    }
    fn name(&self) -> &'static str {
        "skifrun"
    }
}

/// Joins the ofi job this process belongs to (see the [module docs](self)).
pub fn init() -> Result<OfiJob> {
    let cfg = Config::from_env()?;
    if std::env::var_os("SKIFCH_FD").is_some() {
        let shm = crate::shm::init()?;
        let boot = Arc::new(ShmBoot::new(&shm)?);
        // The segment only, not the driver: the driver's drop marks this rank finalized,
        // and it must come with the job's (`Keep::shm`), not with the last holder of the
        // liveness table — the RMA progress thread may hold that a moment longer, and a
        // rank whose process ended first was counted as leaving without finalizing.
        let fab = shm.driver().fabric().clone();
        let keep = Keep {
            boot: Some(boot.clone()),
            lost: Some(Box::new(move || fab.ctl().lost())),
            shm: Some(shm.driver().clone()),
        };
        super::init_with(&*boot, &cfg, keep)
    } else {
        let boot = crate::boot::from_env()?;
        let keep = Keep {
            boot: Some(boot.clone()),
            ..Keep::default()
        };
        super::init_with(&*boot, &cfg, keep)
    }
}
