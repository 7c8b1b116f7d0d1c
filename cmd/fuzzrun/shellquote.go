package main

import "strings"

// shellQuote quotes s as one word for a POSIX shell, so that a printed
// replay command can be pasted as is: "exec:node consumer.js" becomes
// 'exec:node consumer.js'. Words of plain characters are left alone.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@,+%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
