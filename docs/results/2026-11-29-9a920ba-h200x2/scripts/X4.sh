#!/usr/bin/env bash
# Session 21, call 4, on a 2-GPU host (library as at a4bae23): the multi-GPU tests with both GPUs
# required, the Python distributed tests, the scaling table at 2^32 u32 keys and torchrun with
# 2 processes.
set -u
L=/tmp/X4; mkdir -p $L
save() { tar czf $OUT/X4.tgz -C $L . ; }
( while sleep 20; do save; done ) & p=$!
{ nvidia-smi -L; nvidia-smi topo -m | head -4; echo "commit $(cat .gpu/commit)"; date -u; } > $L/host.txt 2>&1
mkdir -p ~/.cache/bitonic && tar xzf .gpu/kcache.tgz -C ~/.cache/bitonic
tar xzf .gpu/pack.tgz -C .gpu
export NCCL_NVLS_ENABLE=0
nccl=$(python3 -c "import nvidia.nccl as m, os; print(os.path.join(list(m.__path__)[0], 'lib'))")
export LD_LIBRARY_PATH=$nccl:${LD_LIBRARY_PATH:-}
t0=$SECONDS
for t in .gpu/mt/process_rank-* .gpu/mt/multi_gpu-* .gpu/mt/multi_sort-*; do
  BITONIC_REQUIRE_GPU=1 BITONIC_REQUIRE_GPUS=2 timeout 120 $t --test-threads=1 >> $L/multi-tests.log 2>&1
  echo "$(basename $t) rc=$? at $((SECONDS - t0)) s" >> $L/summary.txt
done
save
site=/tmp/bitonic-site
python3 -m pip install --quiet --no-index --no-deps --target $site .gpu/wheel/*.whl
BITONIC_REQUIRE_GPU=1 BITONIC_REQUIRE_GPUS=2 PYTHONPATH=$site timeout 90 python3 -m pytest -q python/tests/test_distributed.py > $L/py-distributed.log 2>&1
echo "py-distributed rc=$? at $((SECONDS - t0)) s" >> $L/summary.txt
save
timeout 100 .gpu/bin/bitonic bench --gpus 1,2 --gpus-len 2^32 --repeats 5 -o $L/scaling > $L/scaling.log 2>&1
echo "scaling rc=$? at $((SECONDS - t0)) s" >> $L/summary.txt
save
PYTHONPATH=$site timeout 60 bash bench/torchrun-sort.sh $L/torchrun-2p30-uint32.csv '2^30' int32 $(cat .gpu/commit) > $L/torchrun-2p30-uint32.log 2>&1
echo "torchrun rc=$? at $((SECONDS - t0)) s" >> $L/summary.txt
kill $p; save
cat $L/summary.txt; grep -h "test result" $L/multi-tests.log; tail -n 2 $L/py-distributed.log; cat $L/torchrun-2p30-uint32.csv; tail -n 8 $L/scaling.log
