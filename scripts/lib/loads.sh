# The loads each fidelity pipeline runs under, shared by the scripts that measure or simulate
# them (fidelity.sh, evidence.sh, quiet-sweeps.sh); sourced from the repository root:
#
#   source scripts/lib/loads.sh
#   load_flags PIPELINE              # the load options its real and simulated runs share
#   capacity_concurrency PIPELINE    # the closed loop's concurrency that measures its capacity

load_flags() {
    case $1 in
    many_nodes) echo "--rows 4 --priority-fraction 0.1" ;;
    mixed_streams | collab_early) echo "--stream-chunks 16 --stream-inputs chunk --stream-fraction 0.2" ;;
    *) echo "" ;;
    esac
}
capacity_concurrency() { case $1 in mixed_streams | collab_early) echo 16 ;; *) echo 32 ;; esac }
