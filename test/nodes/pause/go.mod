module zcloud.local/pause

go 1.26
