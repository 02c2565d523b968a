module tinylm

go 1.26
