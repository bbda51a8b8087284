//! Everest-style write off-loading: the home of the real, crash-safe layer and of the policy
//! that both it and the simulated study use (Narayanan et al., "Everest: scaling down peak
//! loads through I/O off-loading"). Empty until it is built; its contract is in
//! `docs/design.md` ("Homes for the studies").
