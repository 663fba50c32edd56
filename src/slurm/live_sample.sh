m=$1 j=$2 t=$3
shift 3
# One live sample of a running job (slurmdash, src/slurm/live.rs): sstat for its steps and,
# at the same time, nvidia-smi on each node named after the first three arguments (marker,
# job id, per-node timeout in seconds), each through its own `srun --overlap` step bounded
# by `timeout`. Data arrives only as arguments; every section is framed by the marker.
# (Each command on one line, so that :stats can count the Slurm commands in it.)
d=$(mktemp -d 2>/dev/null || mktemp -d -t slurmdash-live.XXXXXX) || {
	echo "$m error mktemp"
	exit 0
}
trap 'rm -rf "$d"' EXIT
i=0
for n in "$@"; do
	(
		timeout -k 2 "$t" srun --overlap --jobid="$j" --nodelist="$n" --nodes=1 --ntasks=1 --quiet nvidia-smi --query-gpu=index,uuid,name,utilization.gpu,memory.used,memory.total --format=csv,noheader,nounits >"$d/$i.out" 2>"$d/$i.err" </dev/null
		echo $? >"$d/$i.rc"
	) &
	i=$((i + 1))
done
ts=$(date +%s.%N)
sstat --allsteps --parsable2 --noheader --format=JobID,NTasks,Nodelist,AveCPU,MaxRSS,AveRSS,TRESUsageInTot,TRESUsageInMax,TRESUsageOutTot --jobs="$j" >"$d/sstat.out" 2>"$d/sstat.err" </dev/null
rc=$?
printf '%s sstat %s %s\n' "$m" "$rc" "$ts"
cat "$d/sstat.out"
printf '\n%s stderr\n' "$m"
cat "$d/sstat.err"
printf '\n%s end\n' "$m"
wait
i=0
for n in "$@"; do
	printf '%s gpu %s %s\n' "$m" "$(cat "$d/$i.rc" 2>/dev/null || echo none)" "$n"
	cat "$d/$i.out" 2>/dev/null
	printf '\n%s stderr\n' "$m"
	cat "$d/$i.err" 2>/dev/null
	printf '\n%s end\n' "$m"
	i=$((i + 1))
done
exit 0
