module sinter

go 1.19
