Set Warnings "-notation-overridden,-ambiguous-paths".
From mathcomp Require Import all_ssreflect all_algebra.
Set Implicit Arguments.
Unset Strict Implicit.
Unset Printing Implicit Defensive.
Import GRing.Theory Num.Theory.
Local Open Scope ring_scope.

Section Prelude.
Variables (R : fieldType) (n : nat).
Implicit Types A B : 'M[R]_n.

Lemma unit_one : (1%:M : 'M[R]_n) \in unitmx.
Proof. exact: unitmx1. Qed.

Lemma unit_tr A : A \in unitmx -> A^T \in unitmx.
Proof. by rewrite unitmx_tr. Qed.

Lemma unit_inv A : A \in unitmx -> invmx A \in unitmx.
Proof. by rewrite unitmx_inv. Qed.

Lemma unit_mul A B : A \in unitmx -> B \in unitmx -> A *m B \in unitmx.
Proof. by move=> uA uB; rewrite unitmx_mul uA uB. Qed.

Lemma unit_left A B : A *m B = 1%:M -> A \in unitmx.
Proof. by move/mulmx1_unit=> []. Qed.

Lemma unit_right A B : A *m B = 1%:M -> B \in unitmx.
Proof. by move/mulmx1_unit=> []. Qed.

Lemma unit_eq A B : A = B -> B \in unitmx -> A \in unitmx.
Proof. by move->. Qed.

(* c A, c a non-zero scalar (its proof: the sign lemmas below), is invertible with A, and (c A)⁻¹ = c⁻¹ A⁻¹ *)
Lemma unit_scale (c : R) A : c != 0 -> A \in unitmx -> c *: A \in unitmx.
Proof. by move=> nz uA; rewrite unitmxZ ?unitfE. Qed.

Lemma unit_opp A : A \in unitmx -> - A \in unitmx.
Proof. by move=> uA; rewrite -scaleN1r unit_scale ?oppr_eq0 ?oner_eq0. Qed.

Lemma inverse_scale (c : R) A : c != 0 -> A \in unitmx -> invmx (c *: A) = c^-1 *: invmx A.
Proof. by move=> nz uA; rewrite invmxZ ?unit_scale. Qed.

Lemma inverse_product A B : A \in unitmx -> B \in unitmx -> invmx (A *m B) = invmx B *m invmx A.
Proof.
move=> uA uB.
have h : (A *m B) *m (invmx B *m invmx A) = 1%:M.
  by rewrite mulmxA -(mulmxA A) (mulmxV uB) mulmx1 (mulmxV uA).
by rewrite -[LHS]mulmx1 -h mulmxA (mulVmx (unit_mul uA uB)) mul1mx.
Qed.
End Prelude.

Section IPow.
(* integer powers of any square matrix: A^m = A ⋯ A (npow), A^(-m) = (A^m)⁻¹; ipow A j *m ipow A k = ipow A (j + k)
   for A invertible (ipow_add), for j, k >= 0 without (npowD) *)
Variable R : fieldType.
Fixpoint npow n (A : 'M[R]_n) (m : nat) : 'M[R]_n := if m is m'.+1 then A *m npow A m' else 1%:M.
Definition ipow n (A : 'M[R]_n) (k : int) : 'M[R]_n :=
  match k with Posz m => npow A m | Negz m => invmx (npow A m.+1) end.

Lemma npowC n (A : 'M[R]_n) a : A *m npow A a = npow A a *m A.
Proof. elim: a => [|a IH]; first by rewrite /= mulmx1 mul1mx. by rewrite /= -mulmxA -IH. Qed.
Lemma npowD n (A : 'M[R]_n) a b : npow A a *m npow A b = npow A (a + b)%N.
Proof. elim: a => [|a IH]; first by rewrite /= mul1mx. by rewrite /= -mulmxA IH. Qed.
Lemma npow_unit n (A : 'M[R]_n) a : A \in unitmx -> npow A a \in unitmx.
Proof. move=> u; elim: a => [|a IH]; first exact: unitmx1. by rewrite /= unitmx_mul u IH. Qed.
Lemma ipowN n (A : 'M[R]_n) (m : nat) : ipow A (- m%:Z) = invmx (npow A m).
Proof. by case: m => [|m] //=; rewrite invmx1. Qed.

Lemma ipowS n (A : 'M[R]_n) (i : int) : A \in unitmx -> ipow A (i + 1) = ipow A i *m A.
Proof.
move=> u; case: i => [m|m].
  have -> : Posz m + 1 = Posz m.+1 by rewrite -addn1 PoszD.
  by rewrite /= -npowC.
have -> : Negz m + 1 = - m%:Z by rewrite NegzE -addn1 PoszD opprD addrNK.
by rewrite ipowN /= inverse_product ?npow_unit // -mulmxA mulVmx // mulmx1.
Qed.

Lemma ipowP n (A : 'M[R]_n) (i : int) : A \in unitmx -> ipow A (i - 1) = ipow A i *m invmx A.
Proof.
by move=> u; rewrite -[in RHS](subrK 1 i) ipowS // -mulmxA mulmxV // mulmx1.
Qed.

Lemma ipow_add n (A : 'M[R]_n) (j k : int) : A \in unitmx -> ipow A j *m ipow A k = ipow A (j + k).
Proof.
move=> u; elim/int_rec: k => [|m IH|m IH].
- by rewrite addr0 /= mulmx1.
- by rewrite -addn1 PoszD addrA !ipowS // mulmxA IH.
- by rewrite -addn1 PoszD opprD addrA !ipowP // mulmxA IH.
Qed.
Lemma ipow_unit n (A : 'M[R]_n) (k : int) : A \in unitmx -> ipow A k \in unitmx.
Proof. by move=> u; case: k => m; rewrite /ipow ?unitmx_inv; apply: npow_unit. Qed.
Lemma ipow0 n (A : 'M[R]_n) : ipow A 0 = 1%:M.
Proof. by []. Qed.
Lemma ipow1 n (A : 'M[R]_n) : ipow A 1 = A.
Proof. by rewrite /= mulmx1. Qed.
Lemma ipowN1 n (A : 'M[R]_n) : ipow A (-1) = invmx A.
Proof. by rewrite /= mulmx1. Qed.
Lemma sym_ipow n (A : 'M[R]_n) (k : int) : A^T = A -> (ipow A k)^T = ipow A k.
Proof.
move=> h; have hn : forall m, (npow A m)^T = npow A m.
  by elim=> [|m IH]; rewrite /= ?trmx1 // trmx_mul IH h -npowC.
by case: k => m; rewrite /ipow ?trmx_inv hn.
Qed.
(* the kernel's power_combine at integer exponents: A invertible, or both exponents >= 0 *)
Lemma ipow_combine n (A X Y Z : 'M[R]_n) (j k l : int) : A \in unitmx -> j + k = l ->
  X = ipow A j -> Y = ipow A k -> Z = ipow A l -> X *m Y = Z.
Proof. by move=> u <- -> -> ->; rewrite ipow_add. Qed.
Lemma npow_combine n (A X Y Z : 'M[R]_n) (j k l : nat) : (j + k)%N = l ->
  X = ipow A j -> Y = ipow A k -> Z = ipow A l -> X *m Y = Z.
Proof. by move=> <- -> -> ->; rewrite /= npowD. Qed.
End IPow.

Section LowRank.
(* the low-rank update A + c U V is invertible when A and I + c V A⁻¹ U are (the invertibility half of
   Sherman–Morrison–Woodbury): I + P Q has the inverse I - P (I + Q P)⁻¹ Q, and A + c U V = A (I + (c A⁻¹ U) V) *)
Variable R : fieldType.
Lemma unit_1pmul n k (P : 'M[R]_(n, k)) (Q : 'M[R]_(k, n)) :
  1%:M + Q *m P \in unitmx -> 1%:M + P *m Q \in unitmx.
Proof.
move=> uS; set S := 1%:M + Q *m P in uS.
have h : P *m invmx S *m Q + P *m Q *m (P *m invmx S *m Q) = P *m Q.
  have -> : P *m invmx S *m Q + P *m Q *m (P *m invmx S *m Q) = (P *m S) *m invmx S *m Q.
    by rewrite /S mulmxDr mulmx1 !mulmxDl !mulmxA.
  by rewrite -(mulmxA P S) (mulmxV uS) mulmx1.
have e : (1%:M + P *m Q) *m (1%:M - P *m invmx S *m Q) = 1%:M.
  by rewrite mulmxBr mulmx1 mulmxDl mul1mx h addrK.
by case: (mulmx1_unit e).
Qed.
Lemma unit_lowrank n k (A : 'M[R]_n) (U : 'M[R]_(n, k)) (V : 'M[R]_(k, n)) (c : R) :
  A \in unitmx -> 1%:M + c *: (V *m invmx A *m U) \in unitmx -> A + c *: (U *m V) \in unitmx.
Proof.
move=> uA uS.
have -> : A + c *: (U *m V) = A *m (1%:M + (c *: (invmx A *m U)) *m V).
  by rewrite mulmxDr mulmx1 -scalemxAl -scalemxAr !mulmxA (mulmxV uA) mul1mx.
rewrite unitmx_mul uA; apply: unit_1pmul.
by rewrite -scalemxAr mulmxA.
Qed.

(* the same, for terms T and S equal (by re-association, as the exporter prints them) to A + c U V and I + c V A⁻¹ U *)
Lemma unit_lowrank_eq n k (T A : 'M[R]_n) (S : 'M[R]_k) (U : 'M[R]_(n, k)) (V : 'M[R]_(k, n)) (c : R) :
  T = A + c *: (U *m V) -> S = 1%:M + c *: (V *m invmx A *m U) -> A \in unitmx -> S \in unitmx -> T \in unitmx.
Proof. by move=> -> ->; exact: unit_lowrank. Qed.
End LowRank.

(* --- issue 29: Woodbury's capacitance --------------------------------------------------------------------------- *)
Section Capacitance.
(* A + c U C V is invertible when A, C and the capacitance C⁻¹ + c V A⁻¹ U are:
   I + c V A⁻¹ (U C) = (C⁻¹ + c V A⁻¹ U) C, so it is the low-rank update A + c (U C) V *)
Variable R : fieldType.
Lemma unit_capacitance n k (A : 'M[R]_n) (U : 'M[R]_(n, k)) (C : 'M[R]_k) (V : 'M[R]_(k, n)) (c : R) :
  A \in unitmx -> C \in unitmx -> invmx C + c *: (V *m invmx A *m U) \in unitmx ->
  A + c *: (U *m C *m V) \in unitmx.
Proof.
move=> uA uC uK; apply: unit_lowrank => //.
have -> : 1%:M + c *: (V *m invmx A *m (U *m C)) = (invmx C + c *: (V *m invmx A *m U)) *m C.
  by rewrite mulmxDl (mulVmx uC) -scalemxAl !mulmxA.
by rewrite unitmx_mul uK uC.
Qed.

(* the same, for terms T and S equal (by re-association, as the exporter prints them) to A + c U C V and
   C⁻¹ + c V A⁻¹ U *)
Lemma unit_capacitance_eq n k (T A : 'M[R]_n) (S C : 'M[R]_k) (U : 'M[R]_(n, k)) (V : 'M[R]_(k, n)) (c : R) :
  T = A + c *: (U *m C *m V) -> S = invmx C + c *: (V *m invmx A *m U) -> A \in unitmx -> C \in unitmx ->
  S \in unitmx -> T \in unitmx.
Proof. by move=> -> ->; exact: unit_capacitance. Qed.
End Capacitance.
(* --- end of issue 29 ------------------------------------------------------------------------------------------- *)

Section Block.
(* a block-diagonal matrix [[A, 0], [0, D]] is invertible, with inverse [[A⁻¹, 0], [0, D⁻¹]], when A and D are *)
Variable R : fieldType.
Lemma unit_block_diag m n (A : 'M[R]_m) (D : 'M[R]_n) :
  A \in unitmx -> D \in unitmx -> block_mx A 0 0 D \in unitmx.
Proof. by move=> uA uD; rewrite block_diag_mx_unit uA uD. Qed.

Lemma inverse_block_diag m n (A : 'M[R]_m) (D : 'M[R]_n) : A \in unitmx -> D \in unitmx ->
  invmx (block_mx A 0 0 D) = block_mx (invmx A) 0 0 (invmx D).
Proof. by move=> uA uD; rewrite invmx_block_diag // unit_block_diag. Qed.
End Block.

Section Sym.
Variables (R : fieldType).
Lemma diag_sym n (A : 'M[R]_n) : is_diag_mx A -> A^T = A.
Proof.
move/is_diag_mxP=> d; apply/matrixP=> i j; rewrite mxE.
by case: (eqVneq i j) => [->//|ne]; rewrite !d // eq_sym.
Qed.
Lemma sym_inv n (A : 'M[R]_n) : A^T = A -> (invmx A)^T = invmx A.
Proof. by move=> h; rewrite trmx_inv h. Qed.
Lemma sym_tr n (A : 'M[R]_n) : A^T = A -> (A^T)^T = A^T.
Proof. by move=> h; rewrite trmxK h. Qed.
Lemma sym_gram m n (B : 'M[R]_(m, n)) : (B^T *m B)^T = B^T *m B.
Proof. by rewrite trmx_mul trmxK. Qed.
Lemma sym_gram_t m n (B : 'M[R]_(m, n)) : (B *m B^T)^T = B *m B^T.
Proof. by rewrite trmx_mul trmxK. Qed.
Lemma sym_congr m n (F : 'M[R]_(m, n)) (M : 'M[R]_n) : M^T = M -> (F *m M *m F^T)^T = F *m M *m F^T.
Proof. by move=> h; rewrite !trmx_mul trmxK h mulmxA. Qed.
Lemma sym_add n (A B : 'M[R]_n) : A^T = A -> B^T = B -> (A + B)^T = A + B.
Proof. by move=> hA hB; rewrite raddfD /= hA hB. Qed.
Lemma sym_scale n (c : R) (A : 'M[R]_n) : A^T = A -> (c *: A)^T = c *: A.
Proof. by move=> h; rewrite linearZ /= h. Qed.
Lemma sym_opp n (A : 'M[R]_n) : A^T = A -> (- A)^T = - A.
Proof. by move=> h; rewrite linearN /= h. Qed.
(* a matrix equal (by a hypothesis or a lemma) to a symmetric one; F M Fᵀ for F a product, T its printed form *)
Lemma sym_eq n (A B : 'M[R]_n) : A = B -> B^T = B -> A^T = A.
Proof. by move->. Qed.
Lemma sym_congr_eq m n (T : 'M[R]_m) (F : 'M[R]_(m, n)) (M : 'M[R]_n) :
  T = F *m M *m F^T -> M^T = M -> T^T = T.
Proof. by move=> -> h; exact: sym_congr. Qed.
Lemma sym_block_diag m n (A : 'M[R]_m) (D : 'M[R]_n) : A^T = A -> D^T = D ->
  (block_mx A 0 0 D)^T = block_mx A 0 0 D.
Proof. by move=> hA hD; rewrite tr_block_mx hA hD !trmx0. Qed.
End Sym.

Section PosDef.
Variable R : numFieldType.
Definition posdef n (A : 'M[R]_n) := forall v : 'cV[R]_n, v != 0 -> 0 < (v^T *m A *m v) 0 0.
Lemma posdef_unit n (A : 'M[R]_n) : posdef A -> A \in unitmx.
Proof.
move=> pd; rewrite -unitmx_tr -row_free_unit -kermx_eq0; apply/negPn/negP=> /rowV0Pn [w].
move/sub_kermxP=> wA w0.
have := pd w^T; rewrite trmxK -mulmxA -[A]trmxK -trmx_mul wA trmx0 mulmx0 mxE Order.POrderTheory.ltxx.
move=> h; suff: w^T != 0 by move/h.
by apply: contra w0 => /eqP/(congr1 trmx); rewrite trmxK trmx0 => ->.
Qed.
End PosDef.

Section Ridge.
Variable R : realFieldType.

Lemma sqnorm_ge0 m (w : 'cV[R]_m) : 0 <= (w^T *m w) 0 0.
Proof. rewrite mxE; apply: sumr_ge0 => i _; by rewrite mxE -expr2 sqr_ge0. Qed.

Lemma sqnorm_gt0 m (w : 'cV[R]_m) : w != 0 -> 0 < (w^T *m w) 0 0.
Proof.
move=> nz; rewrite lt0r sqnorm_ge0 andbT; apply: contra nz; rewrite mxE => /eqP h.
apply/eqP/matrixP=> i j; rewrite (ord1 j) [RHS]mxE.
have ge : forall k : 'I_m, true -> 0 <= w^T 0 k * w k 0 by move=> k _; rewrite mxE -expr2 sqr_ge0.
have /(_ i isT) := psumr_eq0P ge h.
by rewrite mxE => /eqP; rewrite mulf_eq0 orbb => /eqP.
Qed.

Lemma posdef_ridge m n (l : R) (B : 'M[R]_(m, n)) : 0 < l -> posdef (l *: 1%:M + B^T *m B).
Proof.
move=> lp v nz.
have e : v^T *m (l *: 1%:M + B^T *m B) *m v = l *: (v^T *m v) + (B *m v)^T *m (B *m v).
  by rewrite mulmxDr mulmxDl -scalemxAr mulmx1 -scalemxAl trmx_mul !mulmxA.
move: (sqnorm_gt0 nz) (sqnorm_ge0 (B *m v)); rewrite e !mxE => a0 b0.
by apply: ltr_paddr => //; rewrite mulr_gt0.
Qed.

Lemma posdef_ridge_t m n (l : R) (B : 'M[R]_(m, n)) : 0 < l -> posdef (l *: 1%:M + B *m B^T).
Proof. by move=> lp; have := posdef_ridge B^T lp; rewrite trmxK. Qed.
End Ridge.

Section Semidef.
(* positive semidefinite: xᵀAx ≥ 0 for every x (no symmetry, as in the kernel) *)
Variable R : realFieldType.
Definition psd n (A : 'M[R]_n) := forall v : 'cV[R]_n, 0 <= (v^T *m A *m v) 0 0.

Lemma psd_gram m n (B : 'M[R]_(m, n)) : psd (B^T *m B).
Proof. by move=> v; rewrite (_ : v^T *m _ *m v = (B *m v)^T *m (B *m v)) ?sqnorm_ge0 // trmx_mul !mulmxA. Qed.

(* N = F M Fᵀ with F invertible and N positive semidefinite: M = F⁻¹ N F⁻ᵀ is positive semidefinite *)
Lemma psd_congr n (N M F : 'M[R]_n) : N = F *m M *m F^T -> F \in unitmx -> psd N -> psd M.
Proof.
move=> e uF pN v; have := pN ((invmx F)^T *m v).
have -> : ((invmx F)^T *m v)^T *m N *m ((invmx F)^T *m v) = v^T *m M *m v.
  rewrite e trmx_mul trmxK !mulmxA (mulmxKV uF) -(mulmxA _ F^T) -trmx_mul (mulVmx uF) trmx1 mulmx1.
  by [].
by [].
Qed.

Lemma psd_congr_t m n (F : 'M[R]_(m, n)) (M : 'M[R]_n) : psd M -> psd (F *m M *m F^T).
Proof. by move=> pM v; move: (pM (F^T *m v)); rewrite trmx_mul trmxK !mulmxA. Qed.

Lemma psd_congr_tt m n (F : 'M[R]_(n, m)) (M : 'M[R]_n) : psd M -> psd (F^T *m M *m F).
Proof. by move=> pM; have := psd_congr_t F^T pM; rewrite trmxK. Qed.

Lemma posdef_add_psd n (A B : 'M[R]_n) : posdef A -> psd B -> posdef (A + B).
Proof.
move=> pA pB v nz.
have -> : (v^T *m (A + B) *m v) 0 0 = (v^T *m A *m v) 0 0 + (v^T *m B *m v) 0 0.
  by rewrite mulmxDr mulmxDl [in LHS]mxE.
by apply: ltr_paddr; [apply: pB | apply: pA].
Qed.

Lemma psd_add_posdef n (A B : 'M[R]_n) : psd A -> posdef B -> posdef (A + B).
Proof. by move=> pA pB; rewrite addrC; apply: posdef_add_psd. Qed.

Lemma posdef_scalar n (l : R) : 0 < l -> posdef (l *: (1%:M : 'M[R]_n)).
Proof.
move=> lp v nz; rewrite -scalemxAr mulmx1 -scalemxAl mxE; apply: mulr_gt0 => //.
exact: sqnorm_gt0.
Qed.

Lemma diag_add n (A B : 'M[R]_n) : is_diag_mx A -> is_diag_mx B -> is_diag_mx (A + B).
Proof.
move=> /is_diag_mxP dA /is_diag_mxP dB; apply/is_diag_mxP => i j ne.
by rewrite mxE dA // dB // addr0.
Qed.

Lemma diag_scalar n (l : R) : is_diag_mx (l *: (1%:M : 'M[R]_n)).
Proof. by rewrite scalemx1 scalar_mx_is_diag. Qed.
End Semidef.

Section Signs.
(* The kernel's sign judgment (derive.kernel.judgments.sign): the signs (-1, 0, 1) a scalar can take, here the
   list s with `sgz x \in s`, computed the way the kernel computes the set; `sgin_neq0 p isT` proves x != 0
   where 0 is not in the list (Coq computes the list, so isT is rejected where 0 may be a sign). A division
   in a theorem's statement is by a scalar proved non-zero so, in its _defined lemma. *)
Variable R : realFieldType.
Implicit Types x y : R.
Definition sgin x (s : seq int) := sgz x \in s.

Lemma sgin_pos x : 0 < x -> sgin x [:: Posz 1].
Proof. by move=> h; rewrite /sgin gtr0_sgz. Qed.

Lemma sgin_any x : sgin x [:: Negz 0; Posz 0; Posz 1].
Proof. by rewrite /sgin /sgz; case: (x == 0); case: (x < 0). Qed.

Lemma sgin_nat n : sgin (n.+1%:R : R) [:: Posz 1].
Proof. by apply: sgin_pos; rewrite ltr0Sn. Qed.

Lemma sgin_zero : sgin (0%:R : R) [:: Posz 0].
Proof. by rewrite /sgin /sgz eqxx. Qed.

Lemma sgin_opp x s : sgin x s -> sgin (- x) [seq - a | a <- s].
Proof. by rewrite /sgin sgzN => h; apply: map_f. Qed.

Lemma sgin_mul x y s t : sgin x s -> sgin y t -> sgin (x * y) [seq a * b | a <- s, b <- t].
Proof. by rewrite /sgin sgzM => hx hy; apply/allpairsP; exists (sgz x, sgz y). Qed.

Lemma sgin_exp n x s : sgin x s -> sgin (x ^+ n) [seq a ^+ n | a <- s].
Proof. by rewrite /sgin sgzX => h; apply: map_f. Qed.

Lemma sgin_neq0 x s : sgin x s -> Posz 0 \notin s -> x != 0.
Proof. move=> h; apply: contra => /eqP x0; move: h; rewrite /sgin x0 sgz0 => h; exact: h. Qed.

(* x^-1 (a divisor x != 0, shown so first): the signs of x but 0, as the kernel judges a negative power *)
Lemma sgin_inv x s : x != 0 -> sgin x s -> sgin x^-1 [seq a <- s | a != Posz 0].
Proof.
move=> nz; have sV : sgz x^-1 = sgz x by rewrite /sgz invr_eq0 invr_lt0.
rewrite /sgin mem_filter sV => ->; rewrite andbT; apply: contra nz => /eqP h.
by rewrite -sgz_eq0 h.
Qed.

Lemma sgz_ge0_in x s : sgz x \in s -> all (fun a => (a == Posz 0) || (a == Posz 1)) s -> 0 <= x.
Proof. by move=> m /allP /(_ _ m) /orP [] /eqP h; rewrite -sgz_ge0 h. Qed.

Lemma sgz_le0_in x s : sgz x \in s -> all (fun a => (a == Posz 0) || (a == Negz 0)) s -> x <= 0.
Proof. by move=> m /allP /(_ _ m) /orP [] /eqP h; rewrite -sgz_le0 h. Qed.

Lemma sgz_gt0_in x s : sgz x \in s -> all (eq_op^~ (Posz 1)) s -> 0 < x.
Proof. by move=> m /allP /(_ _ m) /eqP h; rewrite -sgz_gt0 h. Qed.

Lemma sgz_lt0_in x s : sgz x \in s -> all (eq_op^~ (Negz 0)) s -> x < 0.
Proof. by move=> m /allP /(_ _ m) /eqP h; rewrite -sgz_lt0 h. Qed.

(* the kernel's rule for a sum: every term >= 0 (<= 0) gives a sum >= 0 (<= 0), > 0 (< 0) when a term is *)
Definition sg_add (s t : seq int) : seq int :=
  if all (fun a => (a == Posz 0) || (a == Posz 1)) (s ++ t) then
    (if all (eq_op^~ (Posz 1)) s || all (eq_op^~ (Posz 1)) t then [:: Posz 1] else [:: Posz 0; Posz 1])
  else if all (fun a => (a == Posz 0) || (a == Negz 0)) (s ++ t) then
    (if all (eq_op^~ (Negz 0)) s || all (eq_op^~ (Negz 0)) t then [:: Negz 0] else [:: Posz 0; Negz 0])
  else [:: Negz 0; Posz 0; Posz 1].

Lemma sgin_add x y s t : sgin x s -> sgin y t -> sgin (x + y) (sg_add s t).
Proof.
rewrite /sgin /sg_add => hx hy.
case: ifP => [|_]; [rewrite all_cat => /andP [ps pt] | case: ifP => [|_]; last exact: sgin_any].
  have x0 := sgz_ge0_in hx ps; have y0 := sgz_ge0_in hy pt.
  case: ifP => [/orP [] h|_].
  - by rewrite gtr0_sgz // ltr_paddr // (sgz_gt0_in hx h).
  - by rewrite gtr0_sgz // ltr_paddl // (sgz_gt0_in hy h).
  - have : 0 <= x + y by exact: addr_ge0.
    rewrite Order.POrderTheory.le_eqVlt => /orP [/eqP <- | h].
      by rewrite sgz0.
    by rewrite gtr0_sgz.
rewrite all_cat => /andP [ns nt].
have x0 := sgz_le0_in hx ns; have y0 := sgz_le0_in hy nt.
case: ifP => [/orP [] h|_].
- by rewrite ltr0_sgz // ltr_naddr // (sgz_lt0_in hx h).
- by rewrite ltr0_sgz // ltr_naddl // (sgz_lt0_in hy h).
- have : x + y <= 0 by exact: ler_naddr.
  rewrite Order.POrderTheory.le_eqVlt => /orP [/eqP -> | h].
    by rewrite sgz0.
  by rewrite ltr0_sgz.
Qed.
(* issue 29: a dimension n read as a scalar is the number n%:R, positive for n > 0 (the kernel's dimensions are) *)
Lemma dim_positive (n : nat) : (0 < n)%N -> 0 < (n%:R : R).
Proof. by rewrite ltr0n. Qed.
(* issue 29: a scalar hypothesis x = y gives x the signs of y *)
Lemma sgin_eq x y s : x = y -> sgin y s -> sgin x s.
Proof. by move=> ->. Qed.
End Signs.
Arguments sgin_pos {R x}.
Arguments sgin_any {R}.
Arguments sgin_nat {R}.
Arguments sgin_zero {R}.
Arguments sgin_opp {R x s}.
Arguments sgin_mul {R x y s t}.
Arguments sgin_exp {R} n {x s}.
Arguments sgin_neq0 {R x s}.
Arguments sgin_inv {R x s}.
Arguments sgin_add {R x y s t}.
Arguments sgin_eq {R x y s}.

Section Pow.
Variable R : rcfType.
(* A^(k/2) of a diagonal matrix with positive diagonal: entrywise, sqrt(a_ii)^k *)
Definition mpow n (A : 'M[R]_n) (k : int) : 'M[R]_n := diag_mx (\row_i (Num.sqrt (A i i)) ^ k).

Lemma posdef_diag_pos n (A : 'M[R]_n) : posdef A -> forall i, 0 < A i i.
Proof.
move=> pd i; have := pd (delta_mx i 0).
have -> : (delta_mx i 0)^T *m A *m delta_mx i 0 = col i (row i A).
  by rewrite trmx_delta -rowE colE.
rewrite !mxE; apply.
apply/eqP=> /matrixP /(_ i 0); rewrite !mxE !eqxx /= => /eqP; by rewrite oner_eq0.
Qed.

Lemma mpow_unit n (A : 'M[R]_n) k : posdef A -> mpow A k \in unitmx.
Proof.
move=> pd; rewrite unitmxE det_diag unitfE; apply/prodf_neq0 => i _.
by rewrite mxE expfz_neq0 // lt0r_neq0 // sqrtr_gt0 posdef_diag_pos.
Qed.

(* mpow A k is A^(k/2) only where A is diagonal and positive definite: the lemmas that give the exported steps
   their meaning ask for both, and each theorem's _defined lemma states and proves them for every power *)
Lemma mpow_sym n (A : 'M[R]_n) k : is_diag_mx A -> posdef A -> (mpow A k)^T = mpow A k.
Proof. by move=> _ _; exact: tr_diag_mx. Qed.

Lemma mpow_add n (A : 'M[R]_n) j k : posdef A -> mpow A j *m mpow A k = mpow A (j + k).
Proof.
move=> pd; rewrite mulmx_diag; congr diag_mx; apply/rowP=> i; rewrite !mxE; rewrite expfzDr //.
by rewrite ?unitfE lt0r_neq0 // sqrtr_gt0 posdef_diag_pos.
Qed.

Lemma mpow0 n (A : 'M[R]_n) : mpow A 0 = 1%:M.
Proof. by rewrite /mpow; apply/matrixP=> i j; rewrite !mxE expr0z. Qed.

Lemma mpow2 n (A : 'M[R]_n) : is_diag_mx A -> posdef A -> mpow A 2 = A.
Proof.
move=> /is_diag_mxP d pd; apply/matrixP=> i j; rewrite !mxE.
case: (eqVneq i j) => [->|ne]; last by rewrite mulr0n d.
by rewrite mulr1n -exprnP sqr_sqrtr // Order.POrderTheory.ltW // posdef_diag_pos.
Qed.

Lemma mpowN2 n (A : 'M[R]_n) : is_diag_mx A -> posdef A -> mpow A (-2) = invmx A.
Proof.
move=> d pd.
have h : A *m mpow A (-2) = 1%:M by rewrite -{1}(mpow2 d pd) mpow_add // mpow0.
by rewrite -[LHS]mul1mx -(mulVmx (posdef_unit pd)) -mulmxA h mulmx1.
Qed.

Lemma pow_combine n (A X Y Z : 'M[R]_n) (j k l : int) : posdef A -> j + k = l ->
  X = mpow A j -> Y = mpow A k -> Z = mpow A l -> X *m Y = Z.
Proof. by move=> pd <- -> -> ->; rewrite mpow_add. Qed.
End Pow.

Section Perm.
(* sums reordered: a permutation of n terms is a permutation of the indices 0..n-1 (perm_eq on nat computes) *)
Lemma sum_perm (V : zmodType) (s : seq V) (p q : seq nat) : perm_eq p q ->
  \sum_(i <- p) nth 0 s i = \sum_(i <- q) nth 0 s i.
Proof. exact: perm_big. Qed.
End Perm.

(* ---- Schur complement (issue 29): kept in its own section ---- *)
Section Schur.
(* the kernel's block_inverse_schur and block_inverse_schur_mirror, and the invertibility of [[A, B], [C, D]] by
   a Schur complement: M N = I for N the Schur form, so M is invertible and M⁻¹ = N (MathComp 1.15 has no such
   lemma).  S = D − C A⁻¹ B is the complement of A; T = A − B D⁻¹ C that of D. *)
Variable R : fieldType.
Lemma schur_mul_inv m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n) :
  A \in unitmx -> D - C *m invmx A *m B \in unitmx ->
  block_mx A B C D *m block_mx
    (invmx A + invmx A *m B *m invmx (D - C *m invmx A *m B) *m C *m invmx A)
    (- (invmx A *m B *m invmx (D - C *m invmx A *m B)))
    (- (invmx (D - C *m invmx A *m B) *m C *m invmx A)) (invmx (D - C *m invmx A *m B)) = 1%:M.
Proof.
move=> uA uS; have hS := mulmxV uS; rewrite mulmxBl in hS.
have e : D *m invmx (D - C *m invmx A *m B) =
         1%:M + C *m invmx A *m B *m invmx (D - C *m invmx A *m B) by rewrite -hS subrK.
rewrite mulmx_block [RHS](scalar_mx_block m n 1); congr block_mx.
- by rewrite mulmxDr ?mulmxA (mulmxV uA) !mul1mx mulmxN ?mulmxA addrK.
- by rewrite mulmxN ?mulmxA (mulmxV uA) mul1mx addNr.
- by rewrite mulmxDr mulmxN ?mulmxA e !mulmxDl !mul1mx ?mulmxA subrr.
- by rewrite mulmxN ?mulmxA e addrCA addNr addr0.
Qed.
Lemma schur_mirror_mul_inv m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n) :
  D \in unitmx -> A - B *m invmx D *m C \in unitmx ->
  block_mx A B C D *m block_mx
    (invmx (A - B *m invmx D *m C)) (- (invmx (A - B *m invmx D *m C) *m B *m invmx D))
    (- (invmx D *m C *m invmx (A - B *m invmx D *m C)))
    (invmx D + invmx D *m C *m invmx (A - B *m invmx D *m C) *m B *m invmx D) = 1%:M.
Proof.
move=> uD uT; have hT := mulmxV uT; rewrite mulmxBl in hT.
have e : A *m invmx (A - B *m invmx D *m C) =
         1%:M + B *m invmx D *m C *m invmx (A - B *m invmx D *m C) by rewrite -hT subrK.
rewrite mulmx_block [RHS](scalar_mx_block m n 1); congr block_mx.
- by rewrite e mulmxN ?mulmxA addrK.
- by rewrite mulmxN mulmxDr ?mulmxA e !mulmxDl !mul1mx ?mulmxA addNr.
- by rewrite mulmxN ?mulmxA (mulmxV uD) mul1mx subrr.
- by rewrite mulmxN mulmxDr ?mulmxA (mulmxV uD) !mul1mx addrCA addNr addr0.
Qed.
Lemma mul1_invmx n (M N : 'M[R]_n) : M *m N = 1%:M -> invmx M = N.
Proof.
move=> e; have [uM _] := mulmx1_unit e.
by rewrite -[invmx M]mulmx1 -e mulmxA (mulVmx uM) mul1mx.
Qed.
(* as the exporter uses them: the complement S and the result N as printed, equal to the forms above *)
Lemma unit_block_schur m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n) (S : 'M[R]_n) :
  S = D - C *m invmx A *m B -> A \in unitmx -> S \in unitmx -> block_mx A B C D \in unitmx.
Proof. by move=> -> uA uS; case: (mulmx1_unit (schur_mul_inv uA uS)). Qed.
Lemma unit_block_schur_mirror m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n)
    (T : 'M[R]_m) :
  T = A - B *m invmx D *m C -> D \in unitmx -> T \in unitmx -> block_mx A B C D \in unitmx.
Proof. by move=> -> uD uT; case: (mulmx1_unit (schur_mirror_mul_inv uD uT)). Qed.
Lemma inverse_block_schur m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n) (S : 'M[R]_n)
    (N : 'M[R]_(m + n)) :
  S = D - C *m invmx A *m B ->
  N = block_mx (invmx A + invmx A *m B *m invmx S *m C *m invmx A) (- (invmx A *m B *m invmx S))
               (- (invmx S *m C *m invmx A)) (invmx S) ->
  A \in unitmx -> S \in unitmx -> invmx (block_mx A B C D) = N.
Proof. by move=> eS -> uA uS; rewrite eS in uS *; apply: mul1_invmx; exact: schur_mul_inv. Qed.
Lemma inverse_block_schur_mirror m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n)
    (T : 'M[R]_m) (N : 'M[R]_(m + n)) :
  T = A - B *m invmx D *m C ->
  N = block_mx (invmx T) (- (invmx T *m B *m invmx D)) (- (invmx D *m C *m invmx T))
               (invmx D + invmx D *m C *m invmx T *m B *m invmx D) ->
  D \in unitmx -> T \in unitmx -> invmx (block_mx A B C D) = N.
Proof. by move=> eT -> uD uT; rewrite eT in uT *; apply: mul1_invmx; exact: schur_mirror_mul_inv. Qed.
End Schur.
(* ---- end of the Schur-complement section ---- *)

(* Sizes that depend on an index (the prefix X_t has t rows): `idx t` is t, computed so that
   `idx t.+1` is `idx t + 1` by conversion, the number of rows of `col_mx (X t) x^T` (MathComp's `addn`
   recurses on its first argument, so `t + 1` alone would not reduce to `t.+1` for a variable t). *)
Fixpoint idx (s : nat) : nat := if s is s'.+1 then (idx s' + 1)%N else 0%N.

Lemma idxE s : idx s = s.
Proof. by elim: s => //= s ->; rewrite addn1. Qed.

(* More of the kernel's positive-definiteness judgments: I, transposes and inverses of positive definite
   matrices (x = Ay: xᵀA⁻¹x = yᵀAᵀy), and a positive definite matrix is positive semidefinite. *)
Section PosDefMore.
Variable R : realFieldType.

Lemma posdef_one n : posdef (1%:M : 'M[R]_n).
Proof. by move=> v nz; rewrite mulmx1 sqnorm_gt0. Qed.

Lemma posdef_tr n (A : 'M[R]_n) : posdef A -> posdef A^T.
Proof.
move=> pd v nz; have e : (v^T *m A^T *m v) 0 0 = ((v^T *m A^T *m v)^T) 0 0 by rewrite [RHS]mxE.
by rewrite e !trmx_mul !trmxK mulmxA; apply: pd.
Qed.

Lemma posdef_inv n (A : 'M[R]_n) : posdef A -> posdef (invmx A).
Proof.
move=> pd v nz; have uA := posdef_unit pd.
have ev : v = A *m (invmx A *m v) by rewrite mulmxA mulmxV ?mul1mx.
have nz' : invmx A *m v != 0 by apply: contra nz => /eqP h; rewrite ev h mulmx0.
have -> : v^T *m invmx A *m v = (invmx A *m v)^T *m A^T *m (invmx A *m v).
  by rewrite -trmx_mul -ev mulmxA.
exact: (posdef_tr pd nz').
Qed.

Lemma posdef_psd n (A : 'M[R]_n) : posdef A -> psd A.
Proof.
move=> pd v; case: (altP (v =P 0)) => [->|nz]; last by apply: Order.POrderTheory.ltW; apply: pd.
by rewrite mulmx0 mxE.
Qed.
End PosDefMore.

(* Rational constants in R are images of rationals (`ratr`, a field morphism), whose arithmetic Coq computes:
   c_1 + ... + c_k = c for rational constants, as `collect` sums coefficients: `rat_eq` with a == b computed in
   rat, and x, y rewritten to images of rationals (`ratr_natE`, the morphism's laws). *)
Section Rat.
Variable R : numFieldType.
Lemma ratr_natE (n : nat) : (n%:R : R) = ratr (n%:R). Proof. by rewrite ratr_nat. Qed.
Lemma rat_eq (a b : rat) (x y : R) : a == b -> x = ratr a -> y = ratr b -> x = y.
Proof. by move/eqP=> -> -> ->. Qed.
End Rat.

(* A 1×1 matrix read as a scalar (the kernel's tr s, printed `s 0 0`): `scalar_matrix` moves it out of a
   product, A s B = (s 0 0) A B; it is positive when s is positive definite (x = 1). *)
Section OneByOne.
Variable R : realFieldType.

Lemma scalar11_mid m p (A : 'M[R]_(m, 1)) (s : 'M[R]_1) (B : 'M[R]_(1, p)) : A *m s *m B = s 0 0 *: (A *m B).
Proof. by rewrite {1}[s]mx11_scalar mul_mx_scalar scalemxAl. Qed.

Lemma scalar11_left p (s : 'M[R]_1) (B : 'M[R]_(1, p)) : s *m B = s 0 0 *: B.
Proof. by rewrite {1}[s]mx11_scalar mul_scalar_mx. Qed.

Lemma scalar11_right m (A : 'M[R]_(m, 1)) (s : 'M[R]_1) : A *m s = s 0 0 *: A.
Proof. by rewrite {1}[s]mx11_scalar mul_mx_scalar. Qed.

Lemma sgin_tr_pos (s : 'M[R]_1) : posdef s -> sgin (s 0 0) [:: Posz 1].
Proof.
move=> pd; apply: sgin_pos; have := pd 1%:M; rewrite trmx1 mul1mx mulmx1; apply.
by apply/negP=> /eqP/matrixP/(_ 0 0); rewrite !mxE /= => /eqP; rewrite oner_eq0.
Qed.
End OneByOne.

(* More of the kernel's judgments of (semi)definiteness: c M for c > 0 (c ≥ 0), sums of positive semidefinite
   terms, B Bᵀ. *)
Section DefMore.
Variable R : realFieldType.

Lemma posdef_scale n (c : R) (A : 'M[R]_n) : 0 < c -> posdef A -> posdef (c *: A).
Proof. by move=> cp pd v nz; rewrite -scalemxAr -scalemxAl mxE mulr_gt0 // pd. Qed.

Lemma psd_scale n (c : R) (A : 'M[R]_n) : 0 <= c -> psd A -> psd (c *: A).
Proof. by move=> cp ps v; rewrite -scalemxAr -scalemxAl mxE mulr_ge0 // ps. Qed.

Lemma psd_add n (A B : 'M[R]_n) : psd A -> psd B -> psd (A + B).
Proof. by move=> pA pB v; rewrite mulmxDr mulmxDl mxE addr_ge0 // ?pA ?pB. Qed.

Lemma psd_gram_t m n (B : 'M[R]_(m, n)) : psd (B *m B^T).
Proof. by have := psd_gram B^T; rewrite trmxK. Qed.
End DefMore.

Lemma sgin_gt0 (R : realFieldType) (x : R) : sgin x [:: Posz 1] -> 0 < x.
Proof. by rewrite /sgin inE => /eqP h; rewrite -sgz_cp0 h. Qed.

(* The kernel's diagonal judgment: transposes, c M, -M and products of diagonal matrices are diagonal. *)
Section DiagMore.
Variable R : realFieldType.

Lemma diag_tr n (A : 'M[R]_n) : is_diag_mx A -> is_diag_mx A^T.
Proof. by rewrite is_diag_trmx. Qed.

Lemma diag_scale n (c : R) (A : 'M[R]_n) : is_diag_mx A -> is_diag_mx (c *: A).
Proof. by move=> /is_diag_mxP h; apply/is_diag_mxP => i j ne; rewrite mxE h // mulr0. Qed.

Lemma diag_opp n (A : 'M[R]_n) : is_diag_mx A -> is_diag_mx (- A).
Proof. by move=> /is_diag_mxP h; apply/is_diag_mxP => i j ne; rewrite mxE h // oppr0. Qed.

Lemma diag_mul n (A B : 'M[R]_n) : is_diag_mx A -> is_diag_mx B -> is_diag_mx (A *m B).
Proof. by move=> /diag_mxP [d ->] /diag_mxP [e ->]; rewrite mulmx_diag diag_mx_is_diag. Qed.
End DiagMore.

(* Positive definite congruences: F M Fᵀ for F square invertible and M positive definite; BᵀB for B invertible. *)
Section CongrPD.
Variable R : realFieldType.

Lemma posdef_congr n (F M : 'M[R]_n) : F \in unitmx -> posdef M -> posdef (F *m M *m F^T).
Proof.
move=> uF pd v nz; have nz' : F^T *m v != 0.
  apply: contra nz => /eqP h; have := congr1 (mulmx (invmx F^T)) h.
  by rewrite mulmx0 mulmxA mulVmx ?unitmx_tr // mul1mx => ->.
by have := pd _ nz'; rewrite trmx_mul trmxK !mulmxA.
Qed.

Lemma posdef_gram_unit n (B : 'M[R]_n) : B \in unitmx -> posdef (B^T *m B).
Proof.
move=> uB v nz; have nz' : B *m v != 0.
  apply: contra nz => /eqP h; have := congr1 (mulmx (invmx B)) h.
  by rewrite mulmx0 mulmxA mulVmx // mul1mx => ->.
have -> : v^T *m (B^T *m B) *m v = (B *m v)^T *m (B *m v) by rewrite trmx_mul !mulmxA.
exact: sqnorm_gt0.
Qed.
End CongrPD.

Section Unfolding.
(* issue 29: a judgment carried over an equation A = B (B unfolded: definitions, equations, transposes pushed) *)
Variable R : realFieldType.
Lemma posdef_eq n (A B : 'M[R]_n) : A = B -> posdef B -> posdef A.
Proof. by move->. Qed.
Lemma diag_eq n (A B : 'M[R]_n) : A = B -> is_diag_mx B -> is_diag_mx A.
Proof. by move->. Qed.
Lemma psd_eq n (A B : 'M[R]_n) : A = B -> psd B -> psd A.
Proof. by move->. Qed.
Lemma psd_tr n (A : 'M[R]_n) : psd A -> psd A^T.
Proof.
move=> ps v; have e : (v^T *m A^T *m v) 0 0 = ((v^T *m A^T *m v)^T) 0 0 by rewrite [RHS]mxE.
by rewrite e !trmx_mul !trmxK mulmxA; apply: ps.
Qed.
Lemma psd0 n : psd (0 : 'M[R]_n).
Proof. by move=> v; rewrite mulmx0 mul0mx mxE Order.POrderTheory.lexx. Qed.
End Unfolding.

Section SignsMore.
(* issue 29: the kernel's signs of tr s (a 1×1 s, read as its entry s 0 0): >= 0 for s positive semidefinite, != 0
   for s invertible; and of a non-negative number (an index t read as the scalar t%:R) *)
Variable R : realFieldType.
Lemma sgin_ge0 (x : R) : 0 <= x -> sgin x [:: Posz 0; Posz 1].
Proof.
rewrite Order.POrderTheory.le_eqVlt => /orP [/eqP <- | h]; first by rewrite /sgin sgz0.
by rewrite /sgin gtr0_sgz.
Qed.
Lemma sgin_tr_psd (s : 'M[R]_1) : psd s -> sgin (s 0 0) [:: Posz 0; Posz 1].
Proof. by move=> ps; apply: sgin_ge0; have := ps 1%:M; rewrite trmx1 mul1mx mulmx1. Qed.
Lemma sgin_tr_unit (s : 'M[R]_1) : s \in unitmx -> sgin (s 0 0) [:: Negz 0; Posz 1].
Proof.
rewrite unitmxE {1}(mx11_scalar s) det_scalar1 unitfE => nz.
by rewrite /sgin /sgz (negbTE nz); case: (s 0 0 < 0).
Qed.
Lemma sgin_index (t : nat) : sgin (t%:R : R) [:: Posz 0; Posz 1].
Proof. exact/sgin_ge0/ler0n. Qed.
End SignsMore.

Section BlockDiagonal.
(* issue 29: a block-diagonal matrix [[A, 0], [0, D]] is positive (semi)definite, or diagonal, when A and D are:
   vᵀ[[A, 0], [0, D]]v = v₁ᵀAv₁ + v₂ᵀDv₂ for v = [v₁; v₂], and v ≠ 0 makes v₁ or v₂ non-zero *)
Variable R : realFieldType.
Lemma block_diag_form m n (A : 'M[R]_m) (D : 'M[R]_n) (v : 'cV[R]_(m + n)) :
  (v^T *m block_mx A 0 0 D *m v) 0 0 =
  ((usubmx v)^T *m A *m usubmx v) 0 0 + ((dsubmx v)^T *m D *m dsubmx v) 0 0.
Proof. by rewrite -{1 2}(vsubmxK v) tr_col_mx mul_row_block !mulmx0 addr0 add0r mul_row_col mxE. Qed.
Lemma psd_block_diag m n (A : 'M[R]_m) (D : 'M[R]_n) : psd A -> psd D -> psd (block_mx A 0 0 D).
Proof. by move=> pA pD v; rewrite block_diag_form addr_ge0. Qed.
Lemma posdef_block_diag m n (A : 'M[R]_m) (D : 'M[R]_n) :
  posdef A -> posdef D -> posdef (block_mx A 0 0 D).
Proof.
move=> pA pD v nz; rewrite block_diag_form.
have [u0|u0] := eqVneq (usubmx v) 0; have [d0|d0] := eqVneq (dsubmx v) 0.
- by move: nz; rewrite -(vsubmxK v) u0 d0 col_mx0 eqxx.
- by rewrite u0 trmx0 !mul0mx [X in X + _]mxE add0r pD.
- by rewrite d0 trmx0 !mul0mx [X in _ + X]mxE addr0 pA.
- by rewrite ltr_paddr ?pA // Order.POrderTheory.ltW ?pD.
Qed.
Lemma diag_block_diag m n (A : 'M[R]_m) (D : 'M[R]_n) :
  is_diag_mx A -> is_diag_mx D -> is_diag_mx (block_mx A 0 0 D).
Proof. by move=> dA dD; rewrite is_diag_block_mx // !eqxx dA dD. Qed.
End BlockDiagonal.

Section DiagPowers.
(* issue 29: inverses and integer powers of diagonal matrices are diagonal (invmx is the identity off unitmx) *)
Variable R : realFieldType.
Lemma diag_inv n (A : 'M[R]_n) : is_diag_mx A -> is_diag_mx (invmx A).
Proof.
move=> dA; have [uA|nuA] := boolP (A \in unitmx); last by rewrite invmx_out.
move: uA dA => + /diag_mxP [d dE]; rewrite dE => uA.
have nz i : d 0 i != 0.
  move: uA; rewrite unitmxE det_diag unitfE; apply: contraNneq => z.
  by rewrite (bigD1 i) //= z mul0r.
suff -> : invmx (diag_mx d) = diag_mx (\row_j (d 0 j)^-1) by exact: diag_mx_is_diag.
apply: mul1_invmx; rewrite mulmx_diag; apply/matrixP => i j; rewrite !mxE mulfV //.
Qed.
Lemma diag_npow n (A : 'M[R]_n) m : is_diag_mx A -> is_diag_mx (npow A m).
Proof. by move=> dA; elim: m => [|m IH] /=; [exact: scalar_mx_is_diag | exact: diag_mul]. Qed.
Lemma diag_ipow n (A : 'M[R]_n) k : is_diag_mx A -> is_diag_mx (ipow A k).
Proof. by move=> dA; rewrite /ipow; case: k => m; [exact: diag_npow | apply: diag_inv; exact: diag_npow]. Qed.
End DiagPowers.

Section PosdefPowers.
(* issue 29: an integer power of a symmetric positive definite matrix is positive definite: vᵀA^(2j+1)v =
   (A^j v)ᵀA(A^j v), vᵀA^(2j)v = (A^j v)ᵀ(A^j v), A^j v ≠ 0 for v ≠ 0 (A invertible); negative powers by posdef_inv *)
Variable R : realFieldType.
Lemma posdef_npow n (A : 'M[R]_n) m : A^T = A -> posdef A -> posdef (npow A m).
Proof.
move=> sA pA; have uA := posdef_unit pA.
have sP j : (npow A j)^T = npow A j by have := sym_ipow (Posz j) sA.
have nzw j (v : 'cV[R]_n) : v != 0 -> npow A j *m v != 0.
  move=> nz; apply: contra nz => /eqP h; have := congr1 (mulmx (invmx (npow A j))) h.
  by rewrite mulmx0 mulmxA mulVmx ?npow_unit // mul1mx => ->.
move=> v nz; rewrite -(odd_double_half m) -addnn.
case: (odd m) => /=.
- have -> : v^T *m (A *m npow A (m./2 + m./2)) *m v
            = (npow A m./2 *m v)^T *m A *m (npow A m./2 *m v).
    by rewrite -npowD (mulmxA A) npowC trmx_mul sP !mulmxA.
  exact: pA (nzw _ _ nz).
- have -> : v^T *m npow A (m./2 + m./2) *m v = (npow A m./2 *m v)^T *m (npow A m./2 *m v).
    by rewrite trmx_mul sP -npowD !mulmxA.
  exact: sqnorm_gt0 (nzw _ _ nz).
Qed.
Lemma posdef_ipow n (A : 'M[R]_n) k : A^T = A -> posdef A -> posdef (ipow A k).
Proof.
by move=> sA pA; rewrite /ipow; case: k => m; [exact: posdef_npow | apply: posdef_inv; exact: posdef_npow].
Qed.
End PosdefPowers.

(* ---- Issue 41: linear combinations closed by reflection ----------------------------------------------------
   A step's re-association goals (`e0_`, `e1_`) and some rule instances are equalities between two linear
   combinations (+, -, *:, 0) of the same matrices whose coefficients agree as Laurent polynomials in the scalars
   (rational coefficients; the scalars known non-zero, `zs`, with integer exponents, any other scalar with natural
   exponents): 1/n · (1/n²)·n = 1/n², σ⁻²σ² = 1, terms in any order.  `ols_lin zs nz` reifies both sides (matrix
   atoms and scalar atoms compared up to conversion), computes the normal forms (`vx_check`, by `erefl true`) and
   concludes by `vx_check_sound`, proved below: nothing is assumed, and a wrong equation is not closed.  `ols_prep`
   first moves coefficients and negations out of products, drops identity factors and distributes products over
   sums, on both sides. *)
(* Sums grouped by a key: a sum whose terms of each key add up to 0 is 0. *)
Section Group.
Variables (K : eqType) (V : zmodType) (T : Type) (key : T -> K) (val : T -> V).

Fixpoint gsum (r : seq T) : V := if r is m :: r' then val m + gsum r' else 0.

Lemma gsum_cat r s : gsum (r ++ s) = gsum r + gsum s.
Proof. by elim: r => [|m r IH] /=; rewrite ?add0r // IH addrA. Qed.

Lemma gsum_split (P : pred T) r : gsum r = gsum (filter P r) + gsum (filter (predC P) r).
Proof.
elim: r => [|m r IH] /=; first by rewrite addr0.
by case: (P m) => /=; rewrite IH; [rewrite addrA | rewrite addrCA].
Qed.

Lemma gsum_key_filter r c k :
  k \in map key (filter (fun x => key x != c) r) -> (k != c) && (k \in map key r).
Proof.
elim: r => [|x r IH] //=; case: ifP => Hx /=; last by move/IH => /andP [-> H]; rewrite in_cons H orbT.
by rewrite !in_cons => /orP [/eqP ->|/IH /andP [-> ->]]; rewrite ?eqxx ?Hx ?orbT.
Qed.

Lemma gsum_zero r : (forall k, k \in map key r -> gsum (filter (fun m => key m == k) r) = 0) -> gsum r = 0.
Proof.
move: {2}(size r) (leqnn (size r)) => n; elim: n r => [|n IH] [|m r] //= Hs H.
have Hm := H (key m) (mem_head _ _); rewrite /= eqxx /= in Hm.
rewrite (gsum_split (fun m' => key m' == key m) r) addrA Hm add0r.
apply: IH; first by rewrite size_filter (leq_trans (count_size _ _)).
move=> k /gsum_key_filter /andP [Hne Hin].
have := H k; rewrite in_cons Hin orbT /= eq_sym (negbTE Hne) => /(_ isT) <-.
rewrite -filter_predI; congr gsum; apply: eq_filter => x /=.
by case: eqP => // ->; rewrite Hne.
Qed.
End Group.

(* Laurent monomials: variables known non-zero with integer exponents, others with natural exponents. *)
Section Laurent.
Variable R : numFieldType.

Fixpoint lin_addz (a b : seq int) : seq int :=
  match a, b with x :: a', y :: b' => (x + y) :: lin_addz a' b' | [::], _ => b | _, [::] => a end.
Fixpoint lin_addn (a b : seq nat) : seq nat :=
  match a, b with x :: a', y :: b' => (x + y)%N :: lin_addn a' b' | [::], _ => b | _, [::] => a end.
Fixpoint lin_trimz (a : seq int) : seq int :=
  if a is x :: a' then (let t := lin_trimz a' in if (t == [::]) && (x == 0) then [::] else x :: t) else [::].
Fixpoint lin_trimn (a : seq nat) : seq nat :=
  if a is x :: a' then (let t := lin_trimn a' in if (t == [::]) && (x == 0%N) then [::] else x :: t) else [::].

Fixpoint monoz (xs : seq R) (es : seq int) : R :=
  match xs, es with x :: xs', e :: es' => x ^ e * monoz xs' es' | _, _ => 1 end.
Fixpoint monon (xs : seq R) (es : seq nat) : R :=
  match xs, es with x :: xs', e :: es' => x ^+ e * monon xs' es' | _, _ => 1 end.

Lemma monoz_nil xs : monoz xs [::] = 1. Proof. by case: xs. Qed.
Lemma monon_nil xs : monon xs [::] = 1. Proof. by case: xs. Qed.

Lemma monoz_add xs a b : all (fun x => x != 0) xs -> monoz xs (lin_addz a b) = monoz xs a * monoz xs b.
Proof.
elim: xs a b => [|x xs IH] a b /=; first by rewrite mulr1.
move=> /andP [nx nxs]; case: a => [|e a]; case: b => [|f b] //=; rewrite ?mul1r ?mulr1 //.
by rewrite expfzDr // IH // mulrACA.
Qed.

Lemma monon_add xs a b : monon xs (lin_addn a b) = monon xs a * monon xs b.
Proof.
elim: xs a b => [|x xs IH] a b /=; first by rewrite mulr1.
case: a => [|e a]; case: b => [|f b] //=; rewrite ?mul1r ?mulr1 //.
by rewrite exprD IH mulrACA.
Qed.

Lemma monoz_trim xs a : monoz xs (lin_trimz a) = monoz xs a.
Proof.
elim: a xs => [|e a IH] [|x xs] //=.
case: ifP => [/andP [/eqP t0 /eqP ->]|_] /=; last by rewrite IH.
by rewrite expr0z mul1r -IH t0; case: xs.
Qed.

Lemma monon_trim xs a : monon xs (lin_trimn a) = monon xs a.
Proof.
elim: a xs => [|e a IH] [|x xs] //=.
case: ifP => [/andP [/eqP t0 /eqP ->]|_] /=; last by rewrite IH.
by rewrite expr0 mul1r -IH t0; case: xs.
Qed.

Lemma monoz_neg xs a : monoz xs (map -%R a) = (monoz xs a)^-1.
Proof. by elim: xs a => [|x xs IH] [|e a] //=; rewrite ?invr1 // IH invfM invr_expz. Qed.

Lemma monon_zero xs a : all (eq_op^~ 0%N) a -> monon xs a = 1.
Proof. by elim: xs a => [|x xs IH] [|e a] //= /andP [/eqP -> Ha]; rewrite expr0 mul1r IH. Qed.

Lemma monoz_unit xs i : (i < size xs)%N -> monoz xs (rcons (nseq i 0) 1) = nth 0 xs i.
Proof.
elim: xs i => [|x xs IH] [|i] //= Hi; first by rewrite expr1z; case: xs {IH Hi} => [|y xs] /=; rewrite mulr1.
by rewrite IH // expr0z mul1r.
Qed.

Lemma monon_unit xs i : (i < size xs)%N -> monon xs (rcons (nseq i 0%N) 1%N) = nth 0 xs i.
Proof.
elim: xs i => [|x xs IH] [|i] //= Hi; first by rewrite expr1; case: xs {IH Hi} => [|y xs] /=; rewrite mulr1.
by rewrite IH // expr0 mul1r.
Qed.

Variables (zs ps : seq R).
Definition lin_key := (seq int * seq nat)%type.
Definition lin_mono (k : lin_key) : R := monoz zs k.1 * monon ps k.2.
Definition lin_nf := seq (rat * lin_key).
Definition lin_term (m : rat * lin_key) : R := ratr m.1 * lin_mono m.2.
Definition nf_eval (p : lin_nf) : R := gsum lin_term p.

Definition nf_opp (p : lin_nf) : lin_nf := [seq (- m.1, m.2) | m <- p].
Definition lin_addk (a b : lin_key) : lin_key := (lin_trimz (lin_addz a.1 b.1), lin_trimn (lin_addn a.2 b.2)).
Definition nf_scale (m : rat * lin_key) (q : lin_nf) : lin_nf := [seq (m.1 * m'.1, lin_addk m.2 m'.2) | m' <- q].
Fixpoint nf_mul (p q : lin_nf) : lin_nf := if p is m :: p' then nf_scale m q ++ nf_mul p' q else [::].
Definition nf_one : lin_nf := [:: (1, ([::], [::]))].
Fixpoint nf_exp (p : lin_nf) (k : nat) : lin_nf := if k is k'.+1 then nf_mul p (nf_exp p k') else nf_one.
Definition nf_inv (p : lin_nf) : option lin_nf :=
  match p with
  | [::] => Some [::]
  | [:: (q, (ez, en))] => if all (eq_op^~ 0%N) en then Some [:: (q^-1, (map -%R ez, [::]))] else None
  | _ => None
  end.

Hypothesis nz : all (fun x => x != 0) zs.

Lemma nf_eval_cat p q : nf_eval (p ++ q) = nf_eval p + nf_eval q.
Proof. exact: gsum_cat. Qed.

Lemma nf_eval_opp p : nf_eval (nf_opp p) = - nf_eval p.
Proof. by elim: p => [|m p IH] /=; rewrite ?oppr0 // IH opprD /lin_term rmorphN mulNr. Qed.

Lemma lin_mono_add a b : lin_mono (lin_addk a b) = lin_mono a * lin_mono b.
Proof. by rewrite /lin_mono /= monoz_trim monon_trim monoz_add // monon_add mulrACA. Qed.

Lemma nf_eval_scale m q : nf_eval (nf_scale m q) = lin_term m * nf_eval q.
Proof.
elim: q => [|m' q IH] /=; first by rewrite mulr0.
by rewrite IH mulrDr /lin_term rmorphM lin_mono_add mulrACA.
Qed.

Lemma nf_eval_mul p q : nf_eval (nf_mul p q) = nf_eval p * nf_eval q.
Proof. by elim: p => [|m p IH] /=; rewrite ?mul0r // nf_eval_cat nf_eval_scale IH mulrDl. Qed.

Lemma nf_eval_one : nf_eval nf_one = 1.
Proof. by rewrite /nf_eval /= /lin_term /lin_mono /= monoz_nil monon_nil rmorph1 addr0 !mul1r. Qed.

Lemma nf_eval_exp p k : nf_eval (nf_exp p k) = nf_eval p ^+ k.
Proof.
elim: k => [|k IH]; first exact: nf_eval_one.
by rewrite -[nf_exp p k.+1]/(nf_mul p (nf_exp p k)) nf_eval_mul IH exprS.
Qed.

Lemma nf_eval_inv p q : nf_inv p = Some q -> nf_eval q = (nf_eval p)^-1.
Proof.
case: p => [|[c [ez en]] [|? ?]] //=; first by case=> <-; rewrite invr0.
case: ifP => // Hen [<-]; rewrite /nf_eval /= !addr0 /lin_term /lin_mono /= monon_zero //.
by rewrite monoz_neg (monon_zero _ Hen) !mulr1 [RHS]invfM fmorphV.
Qed.

(* a normal form is 0 when the coefficients of each of its monomials add up to 0 *)
Definition nf_coef (p : lin_nf) (k : lin_key) : rat :=
  foldr (fun m acc => if m.2 == k then m.1 + acc else acc) 0 p.
Definition nf_eqb (p q : lin_nf) : bool :=
  all (fun k => nf_coef p k == nf_coef q k) (map snd p ++ map snd q).

Lemma nf_coef_filter p k :
  gsum lin_term (filter (fun m => m.2 == k) p) = ratr (nf_coef p k) * lin_mono k.
Proof.
elim: p => [|m p IH] /=; first by rewrite rmorph0 mul0r.
by case: eqP => [E|_] /=; rewrite IH // /lin_term E rmorphD mulrDl.
Qed.

Lemma nf_eqb_sound p q : nf_eqb p q -> nf_eval p = nf_eval q.
Proof.
move=> H; apply/eqP; rewrite -subr_eq0 -nf_eval_opp -nf_eval_cat; apply/eqP; apply: (@gsum_zero _ _ _ (@snd rat lin_key)) => k Hk.
rewrite nf_coef_filter.
have -> : nf_coef (p ++ nf_opp q) k = nf_coef p k - nf_coef q k.
  elim: p {H Hk} => [|m p IH] /=; last by case: eqP; rewrite IH // addrA.
  by rewrite add0r; elim: q => [|m q IH] /=; rewrite ?oppr0 //; case: eqP; rewrite IH // opprD.
move: Hk; rewrite map_cat /nf_opp -map_comp => Hk; move: H => /allP /(_ k Hk) /eqP ->.
by rewrite subrr rmorph0 mul0r.
Qed.

(* scalar syntax *)
Inductive sx :=
| SxZ of nat | SxP of nat | SxN of nat | SxAdd of sx & sx | SxMul of sx & sx | SxOpp of sx | SxInv of sx
| SxExp of sx & nat.

Fixpoint sx_eval (e : sx) : R :=
  match e with
  | SxZ i => nth 0 zs i | SxP i => nth 0 ps i | SxN k => k%:R
  | SxAdd a b => sx_eval a + sx_eval b | SxMul a b => sx_eval a * sx_eval b | SxOpp a => - sx_eval a
  | SxInv a => (sx_eval a)^-1 | SxExp a k => sx_eval a ^+ k
  end.

Fixpoint sx_norm (e : sx) : option lin_nf :=
  match e with
  | SxZ i => if (i < size zs)%N then Some [:: (1, (rcons (nseq i 0) 1, [::]))] else None
  | SxP i => if (i < size ps)%N then Some [:: (1, ([::], rcons (nseq i 0%N) 1%N))] else None
  | SxN k => Some [:: (k%:R, ([::], [::]))]
  | SxAdd a b => if (sx_norm a, sx_norm b) is (Some p, Some q) then Some (p ++ q) else None
  | SxMul a b => if (sx_norm a, sx_norm b) is (Some p, Some q) then Some (nf_mul p q) else None
  | SxOpp a => if sx_norm a is Some p then Some (nf_opp p) else None
  | SxInv a => if sx_norm a is Some p then nf_inv p else None
  | SxExp a k => if sx_norm a is Some p then Some (nf_exp p k) else None
  end.

Lemma sx_norm_sound e p : sx_norm e = Some p -> sx_eval e = nf_eval p.
Proof.
elim: e p => [i|i|k|a IHa b IHb|a IHa b IHb|a IHa|a IHa|a IHa k] p /=.
- case: ifP => // Hi [<-].
  by rewrite /nf_eval /= addr0 /lin_term /lin_mono /= rmorph1 mul1r monoz_unit // monon_nil mulr1.
- case: ifP => // Hi [<-].
  by rewrite /nf_eval /= addr0 /lin_term /lin_mono /= rmorph1 mul1r monon_unit // monoz_nil mul1r.
- by case=> <-; rewrite /nf_eval /= addr0 /lin_term /lin_mono /= ratr_nat monoz_nil monon_nil !mulr1.
- by case: (sx_norm a) IHa => // pa IHa; case: (sx_norm b) IHb => // pb IHb [<-]; rewrite nf_eval_cat (IHa pa) // (IHb pb).
- by case: (sx_norm a) IHa => // pa IHa; case: (sx_norm b) IHb => // pb IHb [<-]; rewrite nf_eval_mul (IHa pa) // (IHb pb).
- by case: (sx_norm a) IHa => // pa IHa [<-]; rewrite nf_eval_opp (IHa pa).
- by case: (sx_norm a) IHa => // pa IHa /nf_eval_inv ->; rewrite (IHa pa).
- by case: (sx_norm a) IHa => // pa IHa [<-]; rewrite nf_eval_exp (IHa pa).
Qed.

Definition sx_check (a b : sx) : bool :=
  if (sx_norm a, sx_norm b) is (Some p, Some q) then nf_eqb p q else false.

Lemma sx_check_sound a b : sx_check a b -> sx_eval a = sx_eval b.
Proof.
rewrite /sx_check; case Ea: (sx_norm a) => [p|] //; case Eb: (sx_norm b) => [q|] // H.
by rewrite (sx_norm_sound Ea) (sx_norm_sound Eb) (nf_eqb_sound H).
Qed.

(* linear combinations of matrices *)
Variables (m n : nat) (atoms : seq 'M[R]_(m, n)).

Inductive vx := VxAtom of nat | VxZero | VxAdd of vx & vx | VxOpp of vx | VxScale of sx & vx.

Fixpoint vx_eval (v : vx) : 'M[R]_(m, n) :=
  match v with
  | VxAtom i => nth 0 atoms i | VxZero => 0 | VxAdd a b => vx_eval a + vx_eval b | VxOpp a => - vx_eval a
  | VxScale c a => sx_eval c *: vx_eval a
  end.

Fixpoint vx_terms (v : vx) : seq (sx * nat) :=
  match v with
  | VxAtom i => [:: (SxN 1, i)] | VxZero => [::] | VxAdd a b => vx_terms a ++ vx_terms b
  | VxOpp a => [seq (SxOpp t.1, t.2) | t <- vx_terms a]
  | VxScale c a => [seq (SxMul c t.1, t.2) | t <- vx_terms a]
  end.

Definition vx_term (t : sx * nat) : 'M[R]_(m, n) := sx_eval t.1 *: nth 0 atoms t.2.

Lemma vx_terms_sound v : vx_eval v = gsum vx_term (vx_terms v).
Proof.
elim: v => [i||a IHa b IHb|a IHa|c a IHa] /=.
- by rewrite /vx_term /= scale1r addr0.
- by [].
- by rewrite gsum_cat IHa IHb.
- by rewrite IHa; elim: (vx_terms a) => [|t ts IH] /=; rewrite ?oppr0 // opprD IH /vx_term /= scaleNr.
- by rewrite IHa; elim: (vx_terms a) => [|t ts IH] /=; rewrite ?scaler0 // scalerDr IH /vx_term /= scalerA.
Qed.

Definition vx_coef (ts : seq (sx * nat)) (i : nat) : sx :=
  foldr (fun t acc => if t.2 == i then SxAdd t.1 acc else acc) (SxN 0) ts.

Lemma vx_coef_filter ts i :
  gsum vx_term (filter (fun t => t.2 == i) ts) = sx_eval (vx_coef ts i) *: nth 0 atoms i.
Proof.
elim: ts => [|t ts IH] /=; first by rewrite scale0r.
by case: eqP => [E|_] /=; rewrite IH // /vx_term E scalerDl.
Qed.

Definition vx_check (a b : vx) : bool :=
  let ta := vx_terms a in let tb := vx_terms b in
  all (fun i => sx_check (vx_coef ta i) (vx_coef tb i)) (map snd ta ++ map snd tb).

Lemma vx_check_sound a b : vx_check a b -> vx_eval a = vx_eval b.
Proof.
rewrite /vx_check !vx_terms_sound => H; apply/eqP; rewrite -subr_eq0.
have -> : - gsum vx_term (vx_terms b) = gsum vx_term [seq (SxOpp t.1, t.2) | t <- vx_terms b].
  by elim: (vx_terms b) => [|t ts IH] /=; rewrite ?oppr0 // opprD IH /vx_term /= scaleNr.
rewrite -gsum_cat; apply/eqP; apply: (@gsum_zero _ _ _ (@snd sx nat)) => i Hi; rewrite vx_coef_filter.
have -> : sx_eval (vx_coef (vx_terms a ++ [seq (SxOpp t.1, t.2) | t <- vx_terms b]) i) =
          sx_eval (vx_coef (vx_terms a) i) - sx_eval (vx_coef (vx_terms b) i).
  elim: (vx_terms a) => [|t ts IH] /=; last by case: eqP; rewrite /= IH // addrA.
  by rewrite add0r; elim: (vx_terms b) => [|t ts IH] /=; rewrite ?oppr0 //; case: eqP; rewrite /= IH // opprD.
move: Hi; rewrite map_cat -map_comp => Hi; move: H => /allP /(_ i Hi) /sx_check_sound ->.
by rewrite subrr scale0r.
Qed.
End Laurent.

(* the powers x ^+ t (x the i-th scalar of zs, t an index) the reflection treats as scalars of their own: non-zero
   where x is *)
Definition lin_pows (R : ringType) (zs : seq R) (pw : seq (nat * nat)) : seq R :=
  [seq nth 0 zs q.1 ^+ q.2 | q <- pw].
Lemma lin_nz_pows (R : numFieldType) (zs : seq R) pw :
  all (fun y => y != 0) zs -> all (fun q => q.1 < size zs)%N pw -> all (fun y => y != 0) (zs ++ lin_pows zs pw).
Proof.
move=> nz /allP hpw; rewrite all_cat nz /=; apply/allP => y /mapP [q /hpw hq ->].
by apply: expf_neq0; apply: (allP nz); rewrite mem_nth.
Qed.

Ltac lin_lit k := lazymatch k with O => constr:(O) | S ?k' => let r := lin_lit k' in constr:(S r) end.
Ltac lin_idx x l :=
  lazymatch l with
  | cons ?a ?l' =>
    match constr:(tt) with
    | _ => let _ := constr:(ltac:(first [constr_eq x a | unify x a]; exact tt) : unit) in constr:(0%N)
    | _ => let i := lin_idx x l' in constr:(S i)
    end
  end.
(* an index of a number n%:R (n a natural variable) in a list of scalars, by n alone *)
Ltac lin_idx_nat j l :=
  lazymatch l with
  | cons (GRing.natmul _ j) _ => constr:(0%N)
  | cons _ ?l' => let i := lin_idx_nat j l' in constr:(S i)
  end.
Ltac lin_in x zs :=
  match x with
  | (?j%:R)%R => lin_idx_nat j zs
  | _ => lin_idx x zs
  end.
(* the index of the power atom (i, e) — the i-th scalar of zs to the power e, e not a numeral — in pw *)
Ltac lin_idx_pw i e pw :=
  lazymatch pw with
  | cons (?i', ?e') ?l' =>
    match constr:(tt) with
    | _ => let _ := constr:(ltac:(constr_eq i i'; first [constr_eq e e' | unify e e']; exact tt) : unit) in
           constr:(0%N)
    | _ => let r := lin_idx_pw i e l' in constr:(S r)
    end
  end.
(* a monomial over the non-zero scalars zs (and numbers, and their powers x ^+ t of an index exponent t): its
   inverse is normalised, anything else is an atom *)
Ltac lin_mono c zs :=
  match c with
  | (?a * ?b)%R => let _ := lin_mono a zs in lin_mono b zs
  | (?a ^+ ?e)%R => let _ := lin_lit e in lin_mono a zs
  | (?a ^+ ?e)%R => let _ := lin_in a zs in constr:(tt)
  | (?a ^-1)%R => lin_mono a zs
  | (- ?a)%R => lin_mono a zs
  | 1%R => constr:(tt)
  | (?j%:R)%R => let _ := lin_lit j in constr:(tt)
  | _ => let _ := lin_in c zs in constr:(tt)
  end.
(* the scalar atoms of c: those not in zs added to ps, the powers x ^+ t (x in zs, t not a numeral) to pw as
   (index of x, t); acc = (ps, pw) *)
Ltac sx_atoms c zs acc :=
  lazymatch acc with
  | (?ps, ?pw) =>
    match c with
    | (?a + ?b)%R => let acc1 := sx_atoms a zs acc in sx_atoms b zs acc1
    | (?a * ?b)%R => let acc1 := sx_atoms a zs acc in sx_atoms b zs acc1
    | (- ?a)%R => sx_atoms a zs acc
    | (?a ^-1)%R => let _ := lin_mono a zs in sx_atoms a zs acc
    | (?a ^+ ?e)%R => let _ := lin_lit e in sx_atoms a zs acc
    | (?a ^+ ?e)%R => let i := lin_in a zs in
                      match constr:(tt) with
                      | _ => let _ := lin_idx_pw i e pw in acc
                      | _ => constr:((ps, (i, e) :: pw))
                      end
    | 1%R => acc
    | 0%R => acc
    | (?j%:R)%R => let _ := lin_lit j in acc
    | _ => let _ := lin_in c zs in acc
    | _ => let _ := lin_in c ps in acc
    | _ => constr:((c :: ps, pw))
    end
  end.
(* c as the syntax sx: SxZ i for the i-th scalar of zs, SxZ (k + j) for the j-th power atom of pw (k = size zs),
   SxP i for the i-th of ps *)
Ltac sx_reify c zs k pw ps :=
  match c with
  | (?a + ?b)%R => let x := sx_reify a zs k pw ps in let y := sx_reify b zs k pw ps in constr:(SxAdd x y)
  | (?a * ?b)%R => let x := sx_reify a zs k pw ps in let y := sx_reify b zs k pw ps in constr:(SxMul x y)
  | (- ?a)%R => let x := sx_reify a zs k pw ps in constr:(SxOpp x)
  | (?a ^-1)%R => let _ := lin_mono a zs in let x := sx_reify a zs k pw ps in constr:(SxInv x)
  | (?a ^+ ?e)%R => let m := lin_lit e in let x := sx_reify a zs k pw ps in constr:(SxExp x m)
  | (?a ^+ ?e)%R => let i := lin_in a zs in let j := lin_idx_pw i e pw in constr:(SxZ (k + j)%N)
  | 1%R => constr:(SxN 1)
  | 0%R => constr:(SxN 0)
  | (?j%:R)%R => let m := lin_lit j in constr:(SxN m)
  | _ => let i := lin_in c zs in constr:(SxZ i)
  | _ => let i := lin_in c ps in constr:(SxP i)
  end.
Ltac vx_atoms t zs acc :=
  lazymatch acc with
  | (?ms, ?sacc) =>
    match t with
    | (?a + ?b)%R => let acc1 := vx_atoms a zs acc in vx_atoms b zs acc1
    | (- ?a)%R => vx_atoms a zs acc
    | (?c *: ?a)%R => let sacc1 := sx_atoms c zs sacc in vx_atoms a zs constr:((ms, sacc1))
    | 0%R => acc
    | _ => let _ := lin_idx t ms in acc
    | _ => constr:((t :: ms, sacc))
    end
  end.
Ltac vx_reify t zs k pw ms ps :=
  match t with
  | (?a + ?b)%R => let x := vx_reify a zs k pw ms ps in let y := vx_reify b zs k pw ms ps in constr:(VxAdd x y)
  | (- ?a)%R => let x := vx_reify a zs k pw ms ps in constr:(VxOpp x)
  | (?c *: ?a)%R => let s := sx_reify c zs k pw ps in let x := vx_reify a zs k pw ms ps in constr:(VxScale s x)
  | 0%R => constr:(VxZero)
  | _ => let i := lin_idx t ms in constr:(VxAtom i)
  end.
(* closes L = R between linear combinations of the same matrices with scalar coefficients that agree as Laurent
   polynomials in the scalars, zs the scalars known non-zero (nz : all (fun x => x != 0) zs) and their powers of an
   index exponent (`lin_pows`) *)
Ltac ols_lin zs nz :=
  lazymatch goal with
  | |- @eq ?T ?L ?Rh =>
    lazymatch type of zs with
    | seq ?S =>
      let acc1 := vx_atoms L zs constr:((@nil T, (@nil S, @nil (nat * nat)))) in
      let acc := vx_atoms Rh zs acc1 in
      lazymatch acc with
      | (?ms, (?ps, ?pw)) =>
        let k := eval compute in (size zs) in
        let l := vx_reify L zs k pw ms ps in
        let r := vx_reify Rh zs k pw ms ps in
        exact (@vx_check_sound _ (zs ++ lin_pows zs pw) ps (@lin_nz_pows _ zs pw nz (erefl true)) _ _ ms l r
                               (erefl true))
      end
    end
  end.
(* x ^+ n.+1 = x * x ^+ n where n is not a numeral (an index t: γ^(t+1) = γ γ^t) *)
Ltac ols_exprS :=
  repeat match goal with
  | |- context [(?a ^+ (S ?n))%R] => tryif (let _ := lin_lit n in idtac) then fail else rewrite (exprS a n)
  end.
Ltac ols_prep :=
  do ?[rewrite mulmxDl | rewrite mulmxDr | rewrite -scalemxAl | rewrite -scalemxAr | rewrite mulNmx |
       rewrite mulmxN | rewrite mulmx1 | rewrite mul1mx | rewrite scale_col_mx | rewrite scale_row_mx |
       rewrite scale_block_mx | rewrite opp_col_mx | rewrite opp_row_mx | rewrite opp_block_mx |
       rewrite add_col_mx | rewrite add_row_mx | rewrite add_block_mx];
  rewrite ?mulmxA; ols_exprS.
(* two block matrices of one shape are equal where their blocks are *)
Ltac ols_blocks := repeat first [congr (col_mx _ _) | congr (row_mx _ _) | congr (block_mx _ _ _ _)].
(* what each exported file's `ols_close` does after unfolding its definitions *)
Ltac ols_closing zs nz := ols_prep; ols_blocks; ols_prep; ols_lin zs nz.

Lemma lin_nz_nil (R : numFieldType) : all (fun x : R => x != 0) [::]. Proof. by []. Qed.
Lemma lin_nz_cons (R : numFieldType) (x : R) s :
  0 < x -> all (fun y : R => y != 0) s -> all (fun y : R => y != 0) (x :: s).
Proof. by move=> /lt0r_neq0 /= -> ->. Qed.

(* Issue 41: sizes c·t (t chunks of c rows): `idxm c t.+1` is `idxm c t + c` by conversion, the number of rows of
   `col_mx (X t) B` with B of c rows; `idx` is `idxm 1` (kept for the sizes t). *)
Fixpoint idxm (c s : nat) : nat := if s is s'.+1 then (idxm c s' + c)%N else 0%N.

Lemma idxmE c s : idxm c s = (s * c)%N.
Proof. by elim: s => //= s ->; rewrite mulSn addnC. Qed.

(* Issue 41: the ones vector 1ₙ is `const_mx 1` (n × 1), 1ₙᵀ1ₙ = n (the kernel's `ones_inner`, a 1×1 matrix), and
   diag(v) is `diag_mx v^T` (MathComp's diagonal matrix of a row), invertible for v = c·1ₙ with c ≠ 0 (cI). *)
Section Ones.
Variable R : fieldType.
Lemma ones_inner n : (const_mx 1 : 'M[R]_(n, 1))^T *m const_mx 1 = (n%:R : R) *: (1%:M : 'M[R]_1).
Proof.
apply/matrixP => i j; rewrite !ord1 !mxE /= mulr1.
under eq_bigr do rewrite !mxE mulr1.
by rewrite sumr_const card_ord.
Qed.
Lemma diag_ones_scale n (c : R) : diag_mx ((c *: (const_mx 1 : 'M[R]_(n, 1)))^T) = c%:M.
Proof. by rewrite linearZ /= trmx_const scalemx_const mulr1 diag_const_mx. Qed.
Lemma unit_diag_ones_scale n (c : R) : c != 0 -> diag_mx ((c *: (const_mx 1 : 'M[R]_(n, 1)))^T) \in unitmx.
Proof.
move=> nz; rewrite diag_ones_scale unitmxE det_scalar unitfE.
by rewrite expf_neq0.
Qed.
Lemma unit_diag_ones n : diag_mx ((const_mx 1 : 'M[R]_(n, 1))^T) \in unitmx.
Proof. by have := @unit_diag_ones_scale n 1 (oner_neq0 _); rewrite scale1r. Qed.
End Ones.

(* Issue 41: a scalar fact Q.nonzero(c), the hypothesis c != 0: the signs of c without 0, and c among the scalars
   the reflection may invert. *)
Lemma sgin_nonzero (R : realFieldType) (x : R) s : x != 0 -> sgin x s -> sgin x [seq a <- s | a != Posz 0].
Proof. by move=> nz; rewrite /sgin mem_filter => ->; rewrite sgz_eq0 nz. Qed.
Lemma lin_nz_cons_neq (R : numFieldType) (x : R) s :
  x != 0 -> all (fun y : R => y != 0) s -> all (fun y : R => y != 0) (x :: s).
Proof. by move=> /= -> ->. Qed.

(* Issue 41: a power x ^+ t with an index exponent t (γ^t): positive for x positive, non-zero for x non-zero *)
Lemma sgin_pexp (R : realFieldType) n (x : R) : sgin x [:: Posz 1] -> sgin (x ^+ n) [:: Posz 1].
Proof. by rewrite /sgin !inE sgzX => /eqP ->; rewrite expr1n. Qed.
Lemma sgin_nzexp (R : realFieldType) n (x : R) s :
  Posz 0 \notin s -> sgin x s -> sgin (x ^+ n) [:: Negz 0; Posz 1].
Proof.
move=> h0 hx; have nz := expf_neq0 n (sgin_neq0 hx h0); rewrite /sgin !inE.
by case: (ltrgt0P (x ^+ n)) nz => [/gtr0_sgz ->|/ltr0_sgz ->|->]; rewrite ?eqxx ?orbT.
Qed.

(* Issue 42: the causal mask.  tril(A) = A ⊙ M, Mᵢⱼ = [j ≤ i], is `tril_mx A`, and the strictly lower part tril(A, -1)
   (Mᵢⱼ = [j < i]) is `stril_mx A`: both `trilk s A`, the entries with j + s ≤ i kept.  One lemma per kernel rule
   (tril_block: `trilk_block`, for the 2 × 2 block_mx with square diagonal blocks the exporter writes; tril_scalar:
   `tril_mx11`, `stril_mx11`; tril_sum: `trilk_add`; tril_scale: `trilk_scale`, `trilk_opp`; tril_diagonal: `tril_one`,
   `stril_one`, `trilk0`, `tril_diag_mx`, `stril_diag_mx`; tril_diag_scale: `trilk_diag_mul`, `trilk_mul_diag`), and
   the kernel's unit_lower_triangular judgment: I + Σ cᵢ Dᵢ tril(Aᵢ, -1) Eᵢ (Dᵢ, Eᵢ diagonal) is `unit_lower` (the
   identity's entries on and above the diagonal: `unit_lower_one`, `unit_lower_addl`, `unit_lower_addr` with the
   `strict_lower` terms), so its determinant is 1 (`unit_lower_det`, from MathComp's `det_trig`) and it is invertible
   (`unit_lower_unit`). *)
Section Tril.
Variable R : fieldType.

Definition trilk (s : bool) n (A : 'M[R]_n) : 'M[R]_n := \matrix_(i, j) if (j + s <= i)%N then A i j else 0.

Lemma trilk_add s n (A B : 'M[R]_n) : trilk s (A + B) = trilk s A + trilk s B.
Proof. by apply/matrixP => i j; rewrite !mxE; case: ifP => _; rewrite ?addr0. Qed.
Lemma trilk_opp s n (A : 'M[R]_n) : trilk s (- A) = - trilk s A.
Proof. by apply/matrixP => i j; rewrite !mxE; case: ifP => _; rewrite ?oppr0. Qed.
Lemma trilk_scale s n (c : R) (A : 'M[R]_n) : trilk s (c *: A) = c *: trilk s A.
Proof. by apply/matrixP => i j; rewrite !mxE; case: ifP => _; rewrite ?mulr0. Qed.
Lemma trilk0 s n : trilk s (0 : 'M[R]_n) = 0.
Proof. by apply/matrixP => i j; rewrite !mxE; case: ifP. Qed.

Lemma tril_is_diag n (D : 'M[R]_n) : is_diag_mx D -> trilk false D = D.
Proof.
move/is_diag_mxP => dD; apply/matrixP => i j; rewrite !mxE addn0; case: leqP => // lt.
by rewrite dD // ltn_eqF.
Qed.
Lemma stril_is_diag n (D : 'M[R]_n) : is_diag_mx D -> trilk true D = 0.
Proof.
move/is_diag_mxP => dD; apply/matrixP => i j; rewrite !mxE addn1; case: ifP => // lt.
by rewrite dD // gtn_eqF.
Qed.
Lemma tril_one n : trilk false (1%:M : 'M[R]_n) = 1%:M.
Proof. exact/tril_is_diag/scalar_mx_is_diag. Qed.
Lemma stril_one n : trilk true (1%:M : 'M[R]_n) = 0.
Proof. exact/stril_is_diag/scalar_mx_is_diag. Qed.
Lemma tril_diag_mx n (d : 'rV[R]_n) : trilk false (diag_mx d) = diag_mx d.
Proof. exact/tril_is_diag/diag_mx_is_diag. Qed.
Lemma stril_diag_mx n (d : 'rV[R]_n) : trilk true (diag_mx d) = 0.
Proof. exact/stril_is_diag/diag_mx_is_diag. Qed.

Lemma tril_mx11 (a : 'M[R]_1) : trilk false a = a.
Proof. by apply/matrixP => i j; rewrite !ord1 mxE. Qed.
Lemma stril_mx11 (a : 'M[R]_1) : trilk true a = 0.
Proof. by apply/matrixP => i j; rewrite !ord1 !mxE. Qed.

Lemma trilk_diag_mul s n (d : 'rV[R]_n) (A : 'M[R]_n) : trilk s (diag_mx d *m A) = diag_mx d *m trilk s A.
Proof. by rewrite !mul_diag_mx; apply/matrixP => i j; rewrite !mxE; case: ifP; rewrite ?mulr0. Qed.
Lemma trilk_mul_diag s n (A : 'M[R]_n) (d : 'rV[R]_n) : trilk s (A *m diag_mx d) = trilk s A *m diag_mx d.
Proof. by rewrite !mul_mx_diag; apply/matrixP => i j; rewrite !mxE; case: ifP; rewrite ?mul0r. Qed.

Lemma trilk_block s m n (A : 'M[R]_m) (B : 'M[R]_(m, n)) (C : 'M[R]_(n, m)) (D : 'M[R]_n) :
  trilk s (block_mx A B C D) = block_mx (trilk s A) 0 C (trilk s D).
Proof.
apply/matrixP => i j; rewrite [LHS]mxE.
case: (split_ordP i) => i' ->; case: (split_ordP j) => j' ->;
  rewrite ?block_mxEul ?block_mxEur ?block_mxEdl ?block_mxEdr ?mxE /=.
- by [].
- by rewrite leqNgt (leq_trans (ltn_ord i')) // -addnA leq_addr.
- have h : (j' + s <= m)%N by rewrite (leq_trans (leq_add (leqnn j') (leq_b1 s))) // addn1.
  by rewrite (leq_trans h) // leq_addr.
- by rewrite -addnA leq_add2l.
Qed.

(* strictly lower: zero on and above the diagonal; unit lower triangular: the identity's entries there *)
Definition strict_lower n (N : 'M[R]_n) := forall i j : 'I_n, (i <= j)%N -> N i j = 0.
Definition unit_lower n (T : 'M[R]_n) := forall i j : 'I_n, (i <= j)%N -> T i j = (i == j)%:R.

Lemma strict_lower_stril n (A : 'M[R]_n) : strict_lower (trilk true A).
Proof. by move=> i j le; rewrite mxE addn1 ltnNge le. Qed.
Lemma strict_lower_add n (N M : 'M[R]_n) : strict_lower N -> strict_lower M -> strict_lower (N + M).
Proof. by move=> hN hM i j le; rewrite mxE hN // hM // addr0. Qed.
Lemma strict_lower_opp n (N : 'M[R]_n) : strict_lower N -> strict_lower (- N).
Proof. by move=> hN i j le; rewrite mxE hN // oppr0. Qed.
Lemma strict_lower_scale n (c : R) (N : 'M[R]_n) : strict_lower N -> strict_lower (c *: N).
Proof. by move=> hN i j le; rewrite mxE hN // mulr0. Qed.
Lemma strict_lower_mull n (D N : 'M[R]_n) : is_diag_mx D -> strict_lower N -> strict_lower (D *m N).
Proof. by move=> /diag_mxP [d ->] hN i j le; rewrite mul_diag_mx mxE hN // mulr0. Qed.
Lemma strict_lower_mulr n (N D : 'M[R]_n) : strict_lower N -> is_diag_mx D -> strict_lower (N *m D).
Proof. by move=> hN /diag_mxP [d ->] i j le; rewrite mul_mx_diag mxE hN // mul0r. Qed.
Lemma unit_lower_one n : unit_lower (1%:M : 'M[R]_n).
Proof. by move=> i j _; rewrite mxE. Qed.
Lemma unit_lower_addr n (T N : 'M[R]_n) : unit_lower T -> strict_lower N -> unit_lower (T + N).
Proof. by move=> hT hN i j le; rewrite mxE hT // hN // addr0. Qed.
Lemma unit_lower_addl n (N T : 'M[R]_n) : strict_lower N -> unit_lower T -> unit_lower (N + T).
Proof. by move=> hN hT i j le; rewrite mxE hT // hN // add0r. Qed.
Lemma unit_lower_det n (T : 'M[R]_n) : unit_lower T -> \det T = 1.
Proof.
move=> hT; rewrite det_trig; last by apply/is_trig_mxP => i j lt; rewrite hT ?(ltnW lt) // -val_eqE /= ltn_eqF.
by rewrite big1 // => i _; rewrite hT // eqxx.
Qed.
Lemma unit_lower_unit n (T : 'M[R]_n) : unit_lower T -> T \in unitmx.
Proof. by move=> hT; rewrite unitmxE unit_lower_det // unitr1. Qed.
Lemma unit_one_strict_lower n (N : 'M[R]_n) : strict_lower N -> 1%:M + N \in unitmx.
Proof. by move=> hN; apply/unit_lower_unit/unit_lower_addr => //; exact: unit_lower_one. Qed.
End Tril.
Notation tril_mx := (trilk false).
Notation stril_mx := (trilk true).
