# Sourced by the device-call scripts (run_device.sh, live_vs_sim_gpu.sh) with B = the folder of the
# prebuilt binaries (+ lib/ with the shared libraries the machine lacks): unpacks them when they come
# packed (bin.tar.xz, lib.tar.xz: the device call's size limit) and sets the library and tool paths.
if [ -f "$B/bin.tar.xz" ]; then tar -xJf "$B/bin.tar.xz" -C "$B"; fi
if [ -f "$B/lib.tar.xz" ] && [ ! -d "$B/lib" ]; then mkdir -p "$B/lib" && tar -xJf "$B/lib.tar.xz" -C "$B/lib"; fi
export LD_LIBRARY_PATH=$PWD/$B/lib:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib:${LD_LIBRARY_PATH:-}
if ldd "$B/deltaserve" | grep -q "libcublasLt.so.13 => not found"; then
  d=$(dirname "$(find / -name 'libcublasLt.so.13' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH=$d:$LD_LIBRARY_PATH
fi
export DS_TEST_DATA_DIR=$PWD/tests PATH=/usr/local/cuda/bin:$PATH
