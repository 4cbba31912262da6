! fshim_bench: shim_bench's "calls" mode in Fortran (`use mpi`), for
! bench/shim.sh: N MPI_ALLTOALL calls of 8 bytes per block (MPI_BYTE) on
! MPI_COMM_WORLD after 2000 unmeasured ones; prints, on rank 0, the mean time
! per call of the slowest rank ("per_call_us 3.21").
!
!   fshim_bench [ITERATIONS]     (default 200000)
program fshim_bench
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, i, iterations
  character(len=32) :: arg
  integer(1), allocatable :: sendbuf(:), recvbuf(:)
  double precision :: start, per_call, max_per_call
  iterations = 200000
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    if (arg == '--help' .or. arg == '-h') then
      print '(a)', 'usage: fshim_bench [ITERATIONS]', &
        'Times ITERATIONS (default 200000) 8-byte MPI_ALLTOALL calls for bench/shim.sh.'
      stop
    end if
    read (arg, *, iostat=ierr) iterations
    if (ierr /= 0 .or. iterations < 1) then
      print '(a)', 'usage: fshim_bench [ITERATIONS]'
      error stop 2
    end if
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  allocate (sendbuf(8*nprocs), recvbuf(8*nprocs))
  sendbuf = 0
  start = 0
  do i = 1, 2000 + iterations
    if (i == 2001) then
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
      start = MPI_Wtime()
    end if
    call MPI_Alltoall(sendbuf, 8, MPI_BYTE, recvbuf, 8, MPI_BYTE, MPI_COMM_WORLD, ierr)
  end do
  per_call = (MPI_Wtime() - start)/iterations
  call MPI_Reduce(per_call, max_per_call, 1, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(a,f0.4)', 'per_call_us ', max_per_call*1d6
  call MPI_Finalize(ierr)
end program fshim_bench
