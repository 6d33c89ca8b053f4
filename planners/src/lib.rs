//! Offline planners: where pipeline nodes run and how a repeated pipeline is
//! laid out over time (list scheduling, periodic schedules with retiming,
//! exact MILP scheduling).
