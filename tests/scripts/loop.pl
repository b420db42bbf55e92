#!/usr/bin/perl
# A perl loop: hashes and arrays grow while it prints progress; deterministic output.
# usage: loop.pl [STEPS=60] [DELAY_MS=50]
use strict;
use warnings;
$| = 1;
my $steps = $ARGV[0] // 60;
my $delay = ($ARGV[1] // 50) / 1000.0;
my (%seen, @list);
my $x = 12345;
for my $step (1 .. $steps) {
    for (1 .. 200) {
        $x = ($x * 1103515245 + 12345) % 2147483648;
        $seen{ $x % 1000 }++;
        push @list, $x % 97;
    }
    my $sum = 0;
    $sum += $_ for @list;
    printf "step %d keys %d sum %d last %d\n", $step, scalar(keys %seen), $sum, $x;
    select(undef, undef, undef, $delay);
}
print "done list ", scalar(@list), "\n";
