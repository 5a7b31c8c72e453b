// Package rubric implements Rubric, Veena's guard language.
//
// A node's guard is a Rubric program. It decides what happens to a node
// token that arrives at the node: accept it, discard it, skip the node
// (optionally leaving on a named arc) or delay it until a date. The same
// language can also compute an integer, a string or a date, which is how
// rules other than guards use it.
//
// # Grammar
//
//	program  := stmt EOF
//	stmt     := "if" orExpr "then" stmt "else" stmt      // else is mandatory
//	          | result
//	result   := "Accept" | "Discard" | "Skip" [ID | STRING] // guard results
//	          | NUMBER                                      // integer
//	          | STRING                                      // string
//	          | "(" dateSpec ")"                            // date
//	          | "@" ID                                      // string function
//	          | "delay" "until" dateSpec                    // delay guard result
//	dateSpec := ID                                          // date function
//	          | NUMBER ["business"] UNIT ("before" | "after") ID
//	UNIT     := second[s] | minute[s] | hour[s] | day[s] | week[s]
//	orExpr   := andExpr ("or" andExpr)*
//	andExpr  := notExpr ("and" notExpr)*
//	notExpr  := "not" expr | expr
//	expr     := ID | "(" orExpr ")"
//
//	ID       := LETTER (LETTER | DIGIT | "." | "_")*        // ASCII letters
//	NUMBER   := "-"? DIGIT+
//	STRING   := '"' ( '\"' | any character but '"' )* '"'
//
// Whitespace, // line comments and /* block */ comments separate tokens.
// In a string, \" stands for a quote; every other character, a lone
// backslash included, stands for itself (so a string cannot end in a
// backslash: "a\" is unterminated). An opening parenthesis in result
// position starts a date; in a condition it groups a boolean expression.
//
// A program with no tokens at all (empty, blank, or only comments) means
// Accept, as a blank guard does.
//
// # Keywords and identifiers
//
// Every keyword is case-insensitive: accept, ACCEPT and Accept are the same
// result, and "1 Day BEFORE DueDate" is a valid relative date.
//
// Rubric's original grammar reserved a fixed set of spellings:
// if, then, else, delay, until, second(s) and minute(s) in any case;
// and, or, not in lower or upper case; Accept, Discard, Skip, before, after,
// business, day(s), hour(s), week(s) spelled exactly so. Those spellings are
// never identifiers. Any other word, including another spelling of a
// keyword (accept, Day, Not), is read as the keyword wherever the grammar
// expects that keyword and as an identifier wherever it expects an
// identifier. So every program the original grammar accepts keeps its
// meaning ("Skip accept" skips to the arc named accept, "if Day then ..."
// reads the predicate Day), and keywords work in any case. The one word that
// can be either in the same place is a non-reserved spelling of "not" at the
// start of an operand: it is the operator when an operand follows it
// ("Not x", "Not (x)") and a predicate name otherwise ("if Not then ...").
//
// # Evaluation
//
// "and" and "or" evaluate left to right and stop as soon as the result is
// known; "not" negates. An "if" evaluates its condition and then only the
// chosen branch. Predicates, date functions and string functions are read
// from an [Env]; an error from the Env stops evaluation and is returned
// wrapped with the kind and name of the symbol.
//
// A relative date "N [business] UNIT before|after F" reads the date function
// F and moves it by N units, backwards for before. second, minute and hour
// are exact durations; day is a calendar day and week seven calendar days,
// both keeping the wall-clock time in the date's location. The business
// keyword is parsed and kept in the program (it is printed back by
// [Program.String]) but, as in the engine Rubric comes from, it has no
// effect: "2 business days after F" is the same date as "2 days after F".
//
// A Skip result with an empty arc name (plain "Skip", or Skip "") leaves on
// the node's default (unnamed) arcs.
//
// # Limits
//
// Compile rejects sources longer than [MaxSourceLen] bytes and programs
// nested deeper than [MaxDepth] levels (if statements, parentheses and not
// operators all count), so that compiling and evaluating any input takes
// bounded stack. Relative date offsets must fit in 32 bits; integer results
// in 64 bits.
//
// A compiled [Program] is immutable and safe for concurrent use.
package rubric
