! fortran_refused call|object: built with Open MPI's plain mpif90, run through the Fortran front by
! ../../tests/not_forwarded.sh. Each rank says on stderr which libmpi_mpifh.so.40 it maps
! ("MPI through PATH", from /proc/self/maps), checks that the predefined objects' Fortran numbers
! round-trip through the C front (MPI_Comm_f2c/c2f, as a mixed C and Fortran program uses them),
! says "before", then calls MPI_ADD_ERROR_CLASS (call: not forwarded) or broadcasts MPI_COMPLEX (object:
! a Fortran type without an equivalent in split mode): the front must end the job with a line
! naming the call, never return ("after" is the defect) and never crash.
program fortran_refused
  use mpi
  use iso_c_binding, only: c_int, c_ptr
  implicit none
  ! The C front's translation, called from Fortran as a C part of the program would call it.
  interface
    type(c_ptr) function comm_f2c(handle) bind(c, name='MPI_Comm_f2c')
      import :: c_int, c_ptr
      integer(c_int), value :: handle
    end function
    integer(c_int) function comm_c2f(comm) bind(c, name='MPI_Comm_c2f')
      import :: c_int, c_ptr
      type(c_ptr), value :: comm
    end function
  end interface
  integer :: ierr, rank, part, unit, ios, copy
  complex :: values(2)
  character(len=16) :: argument
  character(len=512) :: line

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  open (newunit=unit, file='/proc/self/maps', action='read', iostat=ios)
  do while (ios == 0)
    read (unit, '(A)', iostat=ios) line
    if (ios == 0 .and. index(line, 'libmpi_mpifh.so.40') > 0) then
      write (0, '(A,I0,A,A)') 'rank ', rank, ': MPI through ', trim(line(index(line, '/'):))
      exit
    end if
  end do
  close (unit)
  call MPI_COMM_DUP(MPI_COMM_WORLD, copy, ierr)
  if (comm_c2f(comm_f2c(MPI_COMM_WORLD)) /= MPI_COMM_WORLD .or. comm_c2f(comm_f2c(MPI_COMM_SELF)) /= MPI_COMM_SELF &
      .or. comm_c2f(comm_f2c(copy)) /= copy) stop 'MPI_Comm_f2c and MPI_Comm_c2f disagree with the Fortran handles'
  call get_command_argument(1, argument)
  write (*, '(A,I0)') 'before rank ', rank
  flush (6)
  if (argument == 'call') then
    call MPI_ADD_ERROR_CLASS(part, ierr)
  else
    values = (0.0, 1.0)
    call MPI_BCAST(values, 2, MPI_COMPLEX, 0, MPI_COMM_WORLD, ierr)
  end if
  write (*, '(A,I0)') 'after rank ', rank
  call MPI_FINALIZE(ierr)
end program
