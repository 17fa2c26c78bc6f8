/* A stand-in libcuda.so.1 for the injection tests: the injection checks that a driver loads
   (and that it is not the toolkit's link stub) before it loads CUPTI. Only cuInit exists. */
__attribute__((visibility("default"))) int cuInit(unsigned int flags) {
  (void)flags;
  return 0;
}
