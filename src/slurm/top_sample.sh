m=$1 j=$2 t=$3 n=$4 nodes=$5 p=$6
# A job top (slurmdash, src/slurm/top.rs): ONE srun step over the job's nodes (at most the
# first few, named in the fifth argument), one task on each, running the node program
# given as the sixth argument (top_node.sh) with the marker and the job id. Its output
# comes back with srun's task labels; srun's own exit closes it. Data arrives only as
# arguments. An array task (`123_4`) or a heterogeneous component (`123+1`) is named by its
# own job id, which srun and scontrol listpids take: asked of squeue first.
case $j in
*_* | *+*) j=$(command squeue --local --noheader --jobs="$j" --format=%A) || j= ;;
esac
[ -n "$j" ] || {
	printf '%s srun none\n' "$m"
	echo "job $2 is not in squeue (ended?)" >&2
	exit 0
}
timeout -k 2 "$t" srun --overlap --jobid="$j" --nodelist="$nodes" --nodes="$n" --ntasks="$n" --ntasks-per-node=1 --label --quiet sh -c "$p" slurmdash-top-node "$m" "$j" </dev/null
printf '%s srun %s\n' "$m" "$?"
exit 0
