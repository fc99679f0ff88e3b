/* The aged synthetic heap of session 12 (docs/design.md): N tracked nodes
 * (a binary tree, node 0 held), allocated in a random order among FILL
 * untracked fillers per node (2*FILL allocated, a seeded random half freed
 * first); prints the median ns per node of 15 full collections.
 *
 *   cc -O2 -Iinclude bench/results/session12/aged_tree.c build/bench-release/libcyclegc.a -lstdc++ -lm -o aged_tree
 *   ./aged_tree 200000 3      # FILL 0: a fresh tree
 * Two builds compared: bench/results/session12/ab.sh 9 "200000 3" ./aged_a ./aged_b */
#include <cyclegc/Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define LOOP_PREFIX cg
#include "../../micro/loops.h"
static double now(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e9+t.tv_nsec;}
static int cmp(const void*a,const void*b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  long n=atol(argv[1]); int fill=atoi(argv[2]); /* fillers per node */
  cg_ready(); PyGC_Disable();
  uint64_t seed=42;
  long nf=n*fill*2;
  PyObject **f=malloc(sizeof(void*)*nf);
  for(long i=0;i<nf;i++){ f[i]=(PyObject*)new_node(); }
  for(long i=0;i<nf;i++){ if(next_random(&seed)&1){ Py_DECREF(f[i]); f[i]=NULL; } }
  BenchNode **v=malloc(sizeof(void*)*n);
  /* nodes allocated in a random order of their tree index */
  long *perm=malloc(sizeof(long)*n); for(long i=0;i<n;i++)perm[i]=i;
  for(long i=n-1;i>0;i--){long j=next_random(&seed)%(i+1); long t=perm[i];perm[i]=perm[j];perm[j]=t;}
  for(long k=0;k<n;k++){ v[perm[k]]=new_node(); }
  for(long i=0;i<n;i++){ if(2*i+1<n) v[i]->a=Py_NewRef((PyObject*)v[2*i+1]); if(2*i+2<n) v[i]->b=Py_NewRef((PyObject*)v[2*i+2]); PyObject_GC_Track(v[i]); }
  for(long i=1;i<n;i++) Py_DECREF(v[i]);
  cgc_collect(2);
  double t[15];
  for(int r=0;r<15;r++){ double t0=now(); cgc_collect(2); t[r]=(now()-t0)/n; }
  qsort(t,15,sizeof(double),cmp);
  printf("%.2f\n",t[7]);
  return 0;
}
