! fcoll_check: coll_check's Fortran twin, for the shim's Fortran bindings. A
! plain MPI program, built three times: with `include 'mpif.h'`
! (-DUSE_MPIF_H), `use mpi` (-DUSE_MPI) and `use mpi_f08` (-DUSE_MPI_F08).
!
!   mpirun -np N fcoll_check [--out OUT_DIR]
!
! Communicators: MPI_COMM_WORLD; an MPI_COMM_DUP of it; MPI_COMM_SPLIT by
! rank modulo 2 ("parity"); of parity, MPI_COMM_DUP_WITH_INFO (released by
! MPI_COMM_DISCONNECT), MPI_COMM_IDUP, a one-dimensional MPI_CART_CREATE
! without reordering, MPI_COMM_SPLIT_TYPE (MPI_COMM_TYPE_SHARED),
! MPI_COMM_CREATE_GROUP of its whole group and MPI_DIST_GRAPH_CREATE_ADJACENT
! (a ring, MPI_UNWEIGHTED, no reordering); and MPI_CART_SUB keeping the second
! dimension of a two-dimensional MPI_CART_CREATE of MPI_COMM_WORLD. On each,
! for MPI_INTEGER and MPI_DOUBLE_PRECISION (an element of two default
! integers here) and 1, 5, 300 and 4096 elements per block: MPI_ALLTOALL,
! MPI_ALLGATHER and MPI_ALLTOALLV, each also with MPI_IN_PLACE. Alltoallv
! sends count(s, d) = mod(s + d, 3) * elements (symmetric, as in place
! requires) at displacements with gaps. With `use mpi_f08` the allgathers
! omit the optional ierror. Then, on MPI_COMM_WORLD, its dup and parity, 300
! integers per block: MPI_IALLTOALL, MPI_IALLGATHER and MPI_IALLTOALLV, each
! completed by MPI_WAIT after computing on other memory, by polling MPI_TEST,
! and by MPI_WAITALL together with a second MPI_IALLGATHER outstanding.
!
! Every receive buffer starts as -1 with a guard of 16 integers after it;
! element k of the block rank s sends to rank d in call c holds
! mod(7919 c + 104729 s + 1299709 (d + 1) + 31 k, 1000000007) (allgather:
! d = -1); the whole buffer, gaps and guard included, is checked after each
! call, and send buffers must come back unchanged. The first mismatch of each
! rank is printed.
!
! Output (--out OUT_DIR): OUT_DIR/rank<R>.bin, every receive buffer of rank R in
! call order; OUT_DIR/summary.json (rank 0), in coll_check's format, the
! blocking calls rank 0 made per collective (total, on MPI_COMM_WORLD, on one
! rank, and the bytes moved between distinct ranks, all ranks together), and
! "nonblocking": the nonblocking calls rank 0 started per collective.
!
! Exit status: 0 when every call delivered the right data, 1 otherwise, 2 on
! a usage error.
#if defined(USE_MPI_F08)
#define COMM_T type(MPI_Comm)
#define TYPE_T type(MPI_Datatype)
#define GROUP_T type(MPI_Group)
#define REQUEST_T type(MPI_Request)
#define OPTIONAL_IERR
#else
#define COMM_T integer
#define TYPE_T integer
#define GROUP_T integer
#define REQUEST_T integer
#define OPTIONAL_IERR , ierr
#endif

program fcoll_check
#if defined(USE_MPI_F08)
  use mpi_f08
#elif defined(USE_MPI)
  use mpi
#endif
  implicit none
#if defined(USE_MPIF_H)
  include 'mpif.h'
#endif
  integer, parameter :: ncomms = 10, guard = 16, poison = -1
  integer, parameter :: element_counts(4) = [1, 5, 300, 4096]
  COMM_T :: comms(ncomms), grid
  logical :: is_world(ncomms)
  character(len=64) :: comm_names(ncomms)
  TYPE_T :: types(2)
  integer :: widths(2) = [1, 2]
  integer :: ierr, rank, nprocs, out, bad, all_bad, i, t, k, mode, size, me
  integer(8) :: call_no = 0, calls(3) = 0, world_calls(3) = 0, single_calls(3) = 0, bytes(3) = 0, started(3) = 0
  integer(8) :: scratch(4096)
  character(len=4096) :: out_dir
  logical :: writing

  writing = command_argument_count() == 2
  if (writing) then
    call get_command_argument(1, out_dir)
    writing = out_dir == '--out'
    call get_command_argument(2, out_dir)
  end if
  if (command_argument_count() /= 0 .and. .not. writing) then
    print '(a)', 'Usage: fcoll_check [--out DIR]', '', &
      'Calls MPI_ALLTOALL, MPI_ALLTOALLV and MPI_ALLGATHER (and MPI_IN_PLACE), then MPI_IALLTOALL,', &
      'MPI_IALLTOALLV and MPI_IALLGATHER, on communicators made by every constructor the shim intercepts,', &
      'checking every element; with --out, writes each rank''s receive buffers to DIR/rank<R>.bin and', &
      'rank 0''s call counts to DIR/summary.json.'
    call get_command_argument(1, out_dir)
    if (out_dir == '--help' .or. out_dir == '-h') stop
    error stop 2
  end if
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  bad = 0
  scratch = 1
  types(1) = MPI_INTEGER
  types(2) = MPI_DOUBLE_PRECISION
  if (writing) then
    open (newunit=out, file=trim(out_dir)//'/rank'//itoa(rank)//'.bin', access='stream', form='unformatted', &
          status='replace')
  end if

  call make_comms()
  do i = 1, ncomms
    if (comms(i) == MPI_COMM_NULL) cycle
    do t = 1, 2
      do k = 1, size(element_counts)
        call alltoall(i, t, element_counts(k), .false.)
        call alltoall(i, t, element_counts(k), .true.)
        call allgather(i, t, element_counts(k), .false.)
        call allgather(i, t, element_counts(k), .true.)
        call alltoallv(i, t, element_counts(k), .false.)
        call alltoallv(i, t, element_counts(k), .true.)
      end do
    end do
  end do
  do i = 1, 3
    do mode = 1, 3
      call alltoall(i, 1, 300, .false., mode)
      call allgather(i, 1, 300, .false., mode)
      call alltoallv(i, 1, 300, .false., mode)
    end do
  end do
  call free_comms()

  if (writing) close (out)
  call MPI_Allreduce(bad, all_bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    if (writing) call write_summary()
    if (all_bad == 0) then
      print '(a,i0,a)', 'fcoll_check: ', nprocs, ' ranks, all data correct'
    else
      print '(a,i0,a)', 'fcoll_check: ', all_bad, ' calls delivered wrong data (first of each rank on stderr)'
    end if
  end if
  call MPI_Finalize(ierr)
  if (all_bad /= 0) error stop 1

contains

  function itoa(v) result(s)
    integer, intent(in) :: v
    character(len=:), allocatable :: s
    character(len=16) :: buf
    write (buf, '(i0)') v
    s = trim(buf)
  end function

  integer function val(c, s, d, k)
    integer(8), intent(in) :: c
    integer, intent(in) :: s, d, k
    val = int(mod(c*7919_8 + int(s, 8)*104729_8 + int(d + 1, 8)*1299709_8 + int(k, 8)*31_8, 1000000007_8))
  end function

  subroutine make_comms()
    COMM_T :: parity
    GROUP_T :: group
    REQUEST_T :: request
    integer :: dims(2), ring(2), psize, pme
    logical :: periods(2), remain(2)
    comm_names = [character(len=64) :: 'MPI_COMM_WORLD', 'dup of MPI_COMM_WORLD', 'split by rank mod 2 (parity)', &
                  'dup_with_info of parity', 'idup of parity', 'cart_create of parity', 'split_type of parity', &
                  'create_group of parity', 'dist_graph_create_adjacent of parity', 'cart_sub of a 2-d world cart']
    is_world = .false.
    is_world(1) = .true.
    comms(1) = MPI_COMM_WORLD
    call MPI_Comm_dup(MPI_COMM_WORLD, comms(2), ierr)
    call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, comms(3), ierr)
    parity = comms(3)
    call MPI_Comm_size(parity, psize, ierr)
    call MPI_Comm_rank(parity, pme, ierr)
    call MPI_Comm_dup_with_info(parity, MPI_INFO_NULL, comms(4), ierr)
    call MPI_Comm_idup(parity, comms(5), request, ierr)
    call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
    dims(1) = psize
    periods = .false.
    call MPI_Cart_create(parity, 1, dims, periods, .false., comms(6), ierr)
    call MPI_Comm_split_type(parity, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, comms(7), ierr)
    call MPI_Comm_group(parity, group, ierr)
    call MPI_Comm_create_group(parity, group, 7, comms(8), ierr)
    call MPI_Group_free(group, ierr)
    ring(1) = mod(pme + psize - 1, psize)
    ring(2) = mod(pme + 1, psize)
    call MPI_Dist_graph_create_adjacent(parity, 2, ring, MPI_UNWEIGHTED, 2, ring, MPI_UNWEIGHTED, MPI_INFO_NULL, &
                                        .false., comms(9), ierr)
    dims = 0
    call MPI_Dims_create(nprocs, 2, dims, ierr)
    call MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, .false., grid, ierr)
    remain = [.false., .true.]
    call MPI_Cart_sub(grid, remain, comms(10), ierr)
    call MPI_Comm_free(grid, ierr)
  end subroutine

  subroutine free_comms()
    call MPI_Comm_disconnect(comms(4), ierr)
    do i = 2, ncomms
      if (i /= 4 .and. comms(i) /= MPI_COMM_NULL) call MPI_Comm_free(comms(i), ierr)
    end do
  end subroutine

  ! On rank 0: one call more on communicator ci (a blocking one unless mode > 0).
  subroutine count_call(c, ci, moved, mode)
    integer, intent(in) :: c, ci, mode
    integer(8), intent(in) :: moved
    integer :: n
    if (rank /= 0) return
    if (mode > 0) then
      started(c) = started(c) + 1
      if (mode == 3) started(3) = started(3) + 1  ! The second, small MPI_IALLGATHER.
      return
    end if
    call MPI_Comm_size(comms(ci), n, ierr)
    calls(c) = calls(c) + 1
    bytes(c) = bytes(c) + moved
    if (is_world(ci)) world_calls(c) = world_calls(c) + 1
    if (n == 1) single_calls(c) = single_calls(c) + 1
  end subroutine

  ! Completes `request` as `mode` says (1: wait after computing, 2: poll
  ! MPI_TEST, 3: MPI_WAITALL with a second MPI_IALLGATHER on the same
  ! communicator, whose data is checked here too).
  subroutine complete(request, mode, ci)
    REQUEST_T, intent(inout) :: request
    integer, intent(in) :: mode, ci
    REQUEST_T :: requests(2)
    logical :: done
    integer :: mine(3), all(3*nprocs), n, j
    select case (mode)
    case (1)
      do j = 1, size(scratch)
        scratch(j) = scratch(j)*31 + j
      end do
      call MPI_Wait(request, MPI_STATUS_IGNORE, ierr)
    case (2)
      done = .false.
      do while (.not. done)
        call MPI_Test(request, done, MPI_STATUS_IGNORE, ierr)
      end do
    case (3)
      call MPI_Comm_size(comms(ci), n, ierr)
      call MPI_Comm_rank(comms(ci), me, ierr)
      mine = [me, me*2, me*3]
      all = poison
      requests(1) = request
      call MPI_Iallgather(mine, 3, MPI_INTEGER, all, 3, MPI_INTEGER, comms(ci), requests(2), ierr)
      call MPI_Waitall(2, requests, MPI_STATUSES_IGNORE, ierr)
      do j = 0, n - 1
        if (any(all(3*j + 1:3*j + 3) /= [j, j*2, j*3])) call mismatch('the second MPI_IALLGATHER of a WAITALL', ci, 1, &
                                                                    3, 3*j + 1)
      end do
    end select
  end subroutine

  subroutine mismatch(what, ci, t, count, at)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ci, t, count, at
    bad = bad + 1
    if (bad == 1) write (0, '(a,i0,a,i0,5a,i0,a,i0,a,i0)') 'fcoll_check: MISMATCH on world rank ', rank, ' in call ', &
      call_no, ': ', what, ' on ', trim(comm_names(ci)), ', type ', t, ', count ', count, ', integer ', at
  end subroutine

  ! Checks rbuf against want (the whole buffer) and writes it.
  subroutine finish(what, ci, t, count, rbuf, want, sbuf, simage)
    character(len=*), intent(in) :: what
    integer, intent(in) :: ci, t, count, rbuf(:), want(:), sbuf(:), simage(:)
    integer :: j
    if (writing) write (out) rbuf
    do j = 1, size(rbuf)
      if (rbuf(j) /= want(j)) then
        call mismatch(what//' receive buffer', ci, t, count, j)
        return
      end if
    end do
    do j = 1, size(sbuf)
      if (sbuf(j) /= simage(j)) then
        call mismatch(what//' send buffer (changed by the call)', ci, t, count, j)
        return
      end if
    end do
  end subroutine

  ! A new call on communicator ci: its number, its mode (0: blocking;
  ! complete's otherwise), the communicator's size n and this rank (me).
  subroutine begin(ci, mode_arg, m, n)
    integer, intent(in) :: ci
    integer, intent(in), optional :: mode_arg
    integer, intent(out) :: m, n
    m = 0
    if (present(mode_arg)) m = mode_arg
    call_no = call_no + 1
    call MPI_Comm_size(comms(ci), n, ierr)
    call MPI_Comm_rank(comms(ci), me, ierr)
  end subroutine

  subroutine alltoall(ci, t, count, in_place, mode_arg)
    integer, intent(in) :: ci, t, count
    logical, intent(in) :: in_place
    integer, intent(in), optional :: mode_arg
    integer, allocatable :: sbuf(:), rbuf(:), want(:)
    integer :: n, w, block, j, kk, m
    REQUEST_T :: request
    call begin(ci, mode_arg, m, n)
    w = widths(t)
    block = count*w
    allocate (sbuf(block*n), rbuf(block*n + guard), want(block*n + guard))
    rbuf = poison
    want = poison
    do j = 0, n - 1
      do kk = 1, block
        sbuf(j*block + kk) = val(call_no, me, j, kk)
        want(j*block + kk) = val(call_no, j, me, kk)
      end do
    end do
    call count_call(1, ci, int(n, 8)*(n - 1)*block*4, m)
    if (in_place) then
      rbuf(1:block*n) = sbuf
      call MPI_Alltoall(MPI_IN_PLACE, count, types(t), rbuf, count, types(t), comms(ci), ierr)
      sbuf = 0
      call finish('MPI_ALLTOALL in place', ci, t, count, rbuf, want, sbuf, sbuf)
    else if (m == 0) then
      call MPI_Alltoall(sbuf, count, types(t), rbuf, count, types(t), comms(ci), ierr)
      call finish('MPI_ALLTOALL', ci, t, count, rbuf, want, sbuf, [(val(call_no, me, j/block, mod(j, block) + 1), &
                                                                     j=0, block*n - 1)])
    else
      call MPI_Ialltoall(sbuf, count, types(t), rbuf, count, types(t), comms(ci), request, ierr)
      call complete(request, m, ci)
      call finish('MPI_IALLTOALL', ci, t, count, rbuf, want, sbuf, [(val(call_no, me, j/block, mod(j, block) + 1), &
                                                                      j=0, block*n - 1)])
    end if
  end subroutine

  subroutine allgather(ci, t, count, in_place, mode_arg)
    integer, intent(in) :: ci, t, count
    logical, intent(in) :: in_place
    integer, intent(in), optional :: mode_arg
    integer, allocatable :: sbuf(:), simage(:), rbuf(:), want(:)
    integer :: n, w, block, j, kk, m
    REQUEST_T :: request
    call begin(ci, mode_arg, m, n)
    w = widths(t)
    block = count*w
    allocate (sbuf(block), rbuf(block*n + guard), want(block*n + guard))
    rbuf = poison
    want = poison
    do kk = 1, block
      sbuf(kk) = val(call_no, me, -1, kk)
    end do
    do j = 0, n - 1
      do kk = 1, block
        want(j*block + kk) = val(call_no, j, -1, kk)
      end do
    end do
    simage = sbuf
    call count_call(3, ci, int(n, 8)*(n - 1)*block*4, m)
    if (in_place) then
      rbuf(me*block + 1:me*block + block) = sbuf
      call MPI_Allgather(MPI_IN_PLACE, count, types(t), rbuf, count, types(t), comms(ci) OPTIONAL_IERR)
      call finish('MPI_ALLGATHER in place', ci, t, count, rbuf, want, sbuf, simage)
    else if (m == 0) then
      call MPI_Allgather(sbuf, count, types(t), rbuf, count, types(t), comms(ci) OPTIONAL_IERR)
      call finish('MPI_ALLGATHER', ci, t, count, rbuf, want, sbuf, simage)
    else
      call MPI_Iallgather(sbuf, count, types(t), rbuf, count, types(t), comms(ci), request, ierr)
      call complete(request, m, ci)
      call finish('MPI_IALLGATHER', ci, t, count, rbuf, want, sbuf, simage)
    end if
  end subroutine

  subroutine alltoallv(ci, t, count, in_place, mode_arg)
    integer, intent(in) :: ci, t, count
    logical, intent(in) :: in_place
    integer, intent(in), optional :: mode_arg
    integer, allocatable :: sbuf(:), simage(:), rbuf(:), want(:), scounts(:), sdispls(:), rcounts(:), rdispls(:)
    integer :: n, w, j, kk, m, at, s, d
    integer(8) :: moved
    REQUEST_T :: request
    call begin(ci, mode_arg, m, n)
    w = widths(t)
    allocate (scounts(n), sdispls(n), rcounts(n), rdispls(n))
    at = 0
    do j = 0, n - 1  ! Send blocks in peer order, a gap of mod(j, 2) elements after each.
      scounts(j + 1) = mod(me + j, 3)*count
      sdispls(j + 1) = at
      at = at + scounts(j + 1) + mod(j, 2)
    end do
    allocate (sbuf(max(1, at*w)))
    at = 0
    do j = n - 1, 0, -1  ! Receive blocks in reverse peer order, one element of gap after each.
      rcounts(j + 1) = mod(j + me, 3)*count
      rdispls(j + 1) = at
      at = at + rcounts(j + 1) + 1
    end do
    allocate (rbuf(at*w + guard), want(at*w + guard))
    sbuf = poison
    rbuf = poison
    want = poison
    do j = 0, n - 1
      do kk = 1, scounts(j + 1)*w
        sbuf(sdispls(j + 1)*w + kk) = val(call_no, me, j, kk)
      end do
      do kk = 1, rcounts(j + 1)*w
        want(rdispls(j + 1)*w + kk) = val(call_no, j, me, kk)
      end do
    end do
    simage = sbuf
    moved = 0
    do s = 0, n - 1
      do d = 0, n - 1
        if (s /= d) moved = moved + mod(s + d, 3)*count*w*4
      end do
    end do
    call count_call(2, ci, moved, m)
    if (in_place) then
      do j = 0, n - 1
        do kk = 1, rcounts(j + 1)*w
          rbuf(rdispls(j + 1)*w + kk) = val(call_no, me, j, kk)
        end do
      end do
      call MPI_Alltoallv(MPI_IN_PLACE, scounts, sdispls, types(t), rbuf, rcounts, rdispls, types(t), comms(ci), ierr)
      call finish('MPI_ALLTOALLV in place', ci, t, count, rbuf, want, sbuf, simage)
    else if (m == 0) then
      call MPI_Alltoallv(sbuf, scounts, sdispls, types(t), rbuf, rcounts, rdispls, types(t), comms(ci), ierr)
      call finish('MPI_ALLTOALLV', ci, t, count, rbuf, want, sbuf, simage)
    else
      call MPI_Ialltoallv(sbuf, scounts, sdispls, types(t), rbuf, rcounts, rdispls, types(t), comms(ci), request, ierr)
      call complete(request, m, ci)
      call finish('MPI_IALLTOALLV', ci, t, count, rbuf, want, sbuf, simage)
    end if
  end subroutine

  subroutine write_summary()
    integer :: u, c
    character(len=9), parameter :: names(3) = [character(len=9) :: 'alltoall', 'alltoallv', 'allgather']
    open (newunit=u, file=trim(out_dir)//'/summary.json', status='replace')
    write (u, '(a,i0,a)', advance='no') '{"nprocs": ', nprocs, ', "rounds": 1, "calls": {'
    do c = 1, 3
      if (c > 1) write (u, '(a)', advance='no') ', '
      write (u, '(5a,i0,a,i0,a,i0,a,i0,a)', advance='no') '"', trim(names(c)), '": ', '{"total": ', '', calls(c), &
        ', "world": ', world_calls(c), ', "single": ', single_calls(c), ', "bytes": ', bytes(c), '}'
    end do
    write (u, '(a)', advance='no') '}, "nonblocking": {'
    do c = 1, 3
      if (c > 1) write (u, '(a)', advance='no') ', '
      write (u, '(3a,i0)', advance='no') '"', trim(names(c)), '": ', started(c)
    end do
    write (u, '(a)') '}}'
    close (u)
  end subroutine

end program fcoll_check
