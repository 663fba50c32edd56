m=$1 j=$2
# One node of a job top (slurmdash, src/slurm/top.rs), run by top_sample.sh's srun inside
# the job's allocation: the user's processes and Slurm's step daemons (ps), which steps the
# job's processes belong to (scontrol listpids, answered by this node's slurmstepd), and the
# GPU processes (nvidia-smi). Every section opens with a line `MARKER NAME` and ends with
# `MARKER rc EXIT`; the parser keeps only lines of the job's steps.
printf '%s node %s %s %s\n' "$m" "${SLURMD_NODENAME:-$(hostname)}" "${SLURM_STEP_ID:-}" "$j"
printf '%s ps\n' "$m"
# (Command lines cut to 300 bytes: srun splits longer lines.)
command ps -o pid=,ppid=,stat=,pcpu=,rss=,etimes=,args= -u "$(id -u)" -C slurmstepd 2>&1 | cut -b 1-300
printf '%s rc %s\n' "$m" "$?"
printf '%s listpids\n' "$m"
command scontrol listpids "$j" 2>&1
printf '%s rc %s\n' "$m" "$?"
if command -v nvidia-smi >/dev/null 2>&1; then
	printf '%s apps\n' "$m"
	command nvidia-smi --query-compute-apps=pid,gpu_uuid,used_gpu_memory,process_name --format=csv,noheader,nounits 2>&1
	printf '%s rc %s\n' "$m" "$?"
	printf '%s gpus\n' "$m"
	command nvidia-smi --query-gpu=index,uuid,utilization.gpu --format=csv,noheader,nounits 2>&1
	printf '%s rc %s\n' "$m" "$?"
fi
printf '%s done\n' "$m"
